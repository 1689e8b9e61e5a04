# An interestingness check for `reprokit reduce`: exits 1 ("interesting") while the ONNX model
# given as its argument has a Sin feeding a Mul, standing for a compiler that fails on that pattern.
import sys, onnx
g = onnx.load(sys.argv[1]).graph
made_by = {o: n for n in g.node for o in n.output}
sys.exit(1 if any(n.op_type == "Mul" and any(i in made_by and made_by[i].op_type == "Sin" for i in n.input)
                  for n in g.node) else 0)
