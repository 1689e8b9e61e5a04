// The code generator shared by the cpp and cuda backends (private to src/codegen). It lowers a
// decomposed, optimised graph to one function per kernel plus an entry point. The plan (what is
// materialised, which view reads through which buffer) is in this class; the kernels of each op
// family are emitted by the emit_*.cpp files.
//
// Values are read through an Access: a base buffer, an offset and strides, so view ops (permute,
// transpose, expand, slice, squeeze, unsqueeze, reshape of viewable data) fold into their
// consumers' indices instead of being copied. On the CPU, matmul and conv2d call BLAS (CBLAS
// sgemm/dgemm; f16/bf16 through f32); on CUDA every kernel is a generated loop.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cpp_codegen.h"
#include "reprokit/ir/graph.h"
#include "reprokit/ir/op_semantics.h"

namespace reprokit::codegen_detail {

const char* storage_type(DType t);                                               // the element type in memory (f16/bf16 as uint16_t)
const char* compute_type(DType t);                                               // the type arithmetic happens in (f16/bf16 in float)
std::string load_expr(DType t, const std::string& ptr, const std::string& idx);  // in compute type
std::string store_value(DType t, const std::string& v);                          // to storage type
// An integer computed in int64_t, wrapped to t's width as the value of a node of dtype t is (the
// reference wraps every node's result; a fused kernel keeps them in locals).
std::string wrapped_value(DType t, const std::string& v);
std::string literal(const AttrValue& v, const char* ct);
// Whether conv2d with weights of this shape [out, in/groups, kh, kw] runs the direct kernel (each
// output reads one input channel, or fewer than 8 inputs) rather than im2col + GEMM; on the CPU.
bool direct_conv(const Shape& weight_shape);

// The strides that view (shape, strides) as `target` without a copy, or nullopt (ATen's rule).
std::optional<Shape> view_strides(const Shape& shape, const Shape& strides, const Shape& target);

// How a value is read: element (c0, c1, ...) of its shape is buffer[offset + sum c_d * strides[d]].
struct Access {
  int base = -1;  // the node whose buffer holds the data
  DType dtype = DType::f32;
  int64_t offset = 0;
  Shape strides;
};

// What the renderings (C++ for the CPU, CUDA C++ for one thread block) differ in. The emitters read
// these fields and never ask which target they write for (tinygrad's renderers do the same by
// overriding fields); a third rendering is a third value (cpp_codegen.cpp).
struct Target {
  const char* name;
  const char* math_ns;      // prefix of libm calls: "std::" on the CPU, CUDA's global overloads
  const char* loop_header;  // fmt: {0} the variable, {1} the count
  const char* kernel_end;   // after each kernel (CUDA: the block barrier)
  bool openmp;              // loops carry OpenMP pragmas (parallel for, simd, simd reductions)
  bool blas;                // matmul and conv2d call CBLAS; otherwise generated loops
  bool fast_float_math;     // float math through the prelude's vectorisable helpers
  // A failing kernel writes its message to err and returns 1; otherwise it raises a flag that
  // indexes error_messages() (a device kernel cannot format text).
  bool errors_as_text;
  // Kernels are grouped into units compiled and cached on their own, reading a pointer list; the
  // entry point calls them. Otherwise __device__ functions of one kernel read the buffer table,
  // and kernel scratch is carved from the workspace instead of allocated.
  bool separate_units;
};
extern const Target kCpuTarget, kCudaTarget;

// Declares off, lo and hi for window column j (emit_linalg.cpp): output columns ox in [lo, hi)
// read input column ox * stride + off inside [0, in_w); the rest read padding.
std::string valid_columns(const Window& win, int64_t in_w, int64_t out_w);

class Codegen {
 public:
  // frozen: inputs whose values every run passes unchanged, in the same tensor (CompileOptions::
  // frozen_inputs); CPU kernels keep what they derive from them in the workspace's kept region.
  Codegen(const Graph& g, const NodeInjections& inj, const Target& target, std::set<std::string> frozen = {});
  std::string run();  // CUDA: the whole source; CPU: the entry point (the kernels are in units())
  // CPU: the separately compiled functions (see CppSource).
  struct Unit {
    std::string name, text;
    std::vector<int> args;  // its pointer list: indices into the entry point's buffer table
    int kernels = 0;        // how many kernels it runs, in order
    bool pointwise = true;  // every kernel it runs is a pointwise loop (no reduction, window or library call)
  };
  const std::vector<Unit>& units() const { return units_; }
  // CPU: what each kernel computes ("node, node  [op, op]"), in the order the entry point runs them.
  const std::vector<std::string>& kernel_labels() const { return kernel_labels_; }
  const std::vector<std::string>& error_messages() const { return errors_; }
  int64_t workspace_bytes() const { return workspace_bytes_; }

  // ---- the plan
  const Graph& g_;
  const NodeInjections& inj_;
  const Target& target_;
  const std::string m_;  // the target's math namespace
  std::vector<std::vector<int>> users_;
  std::map<int, int64_t> group_of_;             // node -> fusion group (groups of two or more)
  std::map<int, std::vector<int>> group_last_;  // last node of a group -> its members in order
  std::map<int64_t, int> group_end_;            // fusion group -> its last node (where its kernel runs)
  // Epilogues: a conv2d whose only readers are one pointwise kernel over its whole output (relu,
  // batch norm, a residual add) runs that kernel in its own output pass instead of storing its
  // value (on the conv GEMM, on each block of the output it finishes): conv node -> the pointwise
  // kernel's nodes. Both run where the pointwise kernel's last node is (its other operands are
  // ready there).
  std::map<int, std::vector<int>> epilogue_of_;
  std::map<int, int> epilogue_at_;  // the pointwise kernel's last node -> the conv it finishes
  // Concatenation in place (CPU): an operand the cat reads once is written straight into its
  // slice of the cat's buffer, where its other readers read it too (operand -> the cat and the
  // slice's byte offset; the cat's buffer lives until the last of them); a cat whose
  // operands all are has no kernel. Only where each operand is one contiguous slice (the dims
  // before the cat's are all 1: squeezenet's fire modules at batch 1). A cat whose operands begin
  // another, longer cat's (DenseNet's: each layer reads the features of every layer before it) is
  // read as the start of the longest such cat, which its operands are written into: a view.
  std::map<int, std::pair<int, int64_t>> in_cat_;
  std::set<int> cat_in_place_;
  std::map<int, Access> views_;  // folded view nodes: read through their base
  std::set<int> outputs_;

  bool is_output(int id) const { return outputs_.count(id) > 0; }
  bool is_view(int id) const { return views_.count(id) > 0; }
  // A value lives in a buffer unless it is a folded view or used only inside its fusion group.
  bool materialized(int id) const;
  // Names inside a kernel are numbered per kernel (node ids are not in the text), so a kernel's
  // text, and the compiled unit holding it, stay the same when the nodes around it come and go.
  std::string buf(int id) const;                        // the C++ name of node id's buffer (recorded as used by the kernel)
  std::string local(const char* prefix, int id) const;  // the kernel's name for a value of node id
  mutable std::map<int, int> local_;                    // node id -> its number in the kernel being emitted
  mutable std::vector<int> used_;                       // buffers the kernel being emitted names, in first-use order
  Access access(int id) const;                          // how to read node id
  // A view op's value read through its operand's buffer, or nullopt when the layout needs a copy.
  std::optional<Access> view_access(int id) const;

  // ---- kernel helpers (cpp_codegen.cpp)
  // A loop over [0, n) in the target's form: with OpenMP, parallel when the work is worth it and
  // vectorisable (`simd`) when asked; on CUDA, strided over the block's threads.
  std::string loop(const char* var, int64_t n, int64_t work_per_item, bool simd = false) const;
  std::string end_kernel() const;
  std::string fail(const std::string& msg);  // a statement reporting msg and leaving the kernel
  // Declares `ct* name` over `count` elements of memory the current kernel may use as it likes
  // (CPU: a slice of the workspace's scratch arena, shared by all kernels; CUDA: its own slice).
  std::string scratch(const std::string& name, const char* ct, int64_t count);
  // CPU: the entry point's buffer-table slot of the scratch arena (after the caller's outputs).
  int scratch_id() const { return g_.size() + static_cast<int>(g_.outputs.size()); }
  // CPU: memory of the current kernel's own that lasts from run to run (the workspace's kept
  // region, after the scratch arena, zeroed by the caller before the first run): `bytes` at a
  // 64-byte boundary, as `unsigned char* name`. Only for what a frozen input decides.
  std::string kept(const std::string& name, int64_t bytes);
  int kept_id() const { return scratch_id() + 1; }
  bool frozen(int id) const { return id >= 0 && id < g_.num_inputs() && frozen_.count(g_.node(id).name) > 0; }
  std::string injection_prologue(int id);
  bool perturbs(int id) const;
  // The opening of the call that applies node id's accuracy fault to a value: "rk_perturb(",
  // "rk_perturb_rel(REL, " or "rk_perturb_one(K, "; the caller closes it.
  std::string perturb_open(int id) const;
  static std::string sanitize(const std::string& s);
  std::string kernel_header(const std::vector<int>& ids);

  // The index of element `flat` (C order over `iter`) of an Access broadcast to `iter`.
  std::string ptr(const Access& a) const { return buf(a.base); }
  static std::string index_of(const Access& a, const Shape& shape, const Shape& iter, const std::string& flat);
  std::string load(int v, const char* ct, const Shape& iter, const std::string& flat) const;

  // ---- emit_pointwise.cpp
  std::string pointwise_expr(int id, const Shape& iter, const std::string& flat);
  bool fast_float_math(const char* ct) const;
  std::optional<std::string> float_reciprocal(const Operand& divisor, const char* ct) const;  // "(float)(1/c)", or nullopt
  static std::string convert_expr(const std::string& x, DType from, DType to);
  std::string operand_expr(const Operand& o, const char* ct, const Shape& iter, const std::string& flat);
  std::string pointwise_body(const std::vector<int>& ids, const Shape& iter, const std::string& flat, const std::string& indent);
  // A value the pointwise kernel computes itself rather than reads (a conv's output pass feeding
  // its epilogue): its node, statements run before its rows of the last dim, its value at row r,
  // column j (flat `i`), and its cost per element (the loop's work estimate). With block_rows 0
  // the statements run for each row `r`; else once per block `nc` of rows r = nc * block_rows ...
  // With `span`, the kernel covers only the flat elements [span_lo, span_hi) (variables of the
  // code around it), on the calling thread (one loop, or row by row where an operand needs it):
  // a conv GEMM's epilogue on a block.
  struct ComputedOperand {
    int value;
    std::string prologue, element;
    int64_t work = 1, block_rows = 0;
    bool span = false;
  };
  std::string pointwise_kernel(const std::vector<int>& ids, const ComputedOperand* computed = nullptr);
  std::string reduction_kernel(int id, const std::vector<int>& prologue);
  std::set<int> in_kernel_;               // values computed as temporaries of the kernel being emitted
  std::map<int, std::string> row_index_;  // per operand: its index inside a row loop
  // Statements the body of the loop being emitted needs before that loop (a clamp's bounds as
  // values the optimiser cannot see through); its emitter takes them with take_hoisted().
  std::string hoisted_;
  std::string take_hoisted() { return std::exchange(hoisted_, std::string()); }

  // ---- emit_linalg.cpp
  std::string matmul_kernel(int id);
  std::string conv2d_kernel(int id);
  // conv2d's output pass: bias, f16/bf16 rounding, an injected error, and its epilogue (above).
  std::string conv2d_output_pass(int id, const std::string& gemm_out, const std::string& bias);
  // The conv's value read back from gemm_out at `flat`, and as the epilogue's computed operand.
  std::string conv2d_element(int id, const std::string& gemm_out, const std::string& bias, const char* flat);
  ComputedOperand conv2d_value(int id, const std::string& gemm_out, const std::string& bias);
  std::string conv2d_direct(int id);          // without BLAS
  std::string conv3d_kernel(int id);          // direct loops, CPU and CUDA
  std::string conv_transpose_kernel(int id);  // conv_transpose2d/3d, direct loops
  std::string conv2d_planes(int id);          // CPU, depthwise and other convs of few inputs an output
  bool panel_conv(int id) const;              // runs on conv2d_panels
  // float: im2col into panels and the prelude's conv GEMM; w_ptr the weights, c_at where (nb, g) writes;
  // its epilogue (gemm_out, bias: as conv2d_output_pass) run by the GEMM on each block it finishes
  std::string conv2d_panels(int id, const std::string& w_ptr, const std::string& c_at, const std::string& gemm_out, const std::string& bias);
  // `static const RkConvWindow window = {...};` for channels of x under win, to an output os
  std::string window_constant(int x, const Window& win, const Shape& os, int64_t channels) const;
  // The conv kernels' RkEpilogue on the blocks they finish: the lambda's code and the argument
  // (both empty where there is none, and conv2d_output_pass finishes the output).
  struct BlockEpilogue {
    std::string code, arg;
  };
  BlockEpilogue conv_block_epilogue(int id, const std::string& gemm_out, const std::string& bias, const std::string& plane_of_m,
                                    const std::string& channel_of_m);
  // float depthwise convs: the prelude's rk_depthwise_f32, rows of output in AVX-512 or AVX2
  // vectors (cpp_conv_depthwise.h), under the preprocessor condition depthwise_machines gives,
  // with conv2d_planes for the other machines; arguments as conv2d_panels.
  bool depthwise_rows(int id) const;
  std::string depthwise_machines(int id) const;
  bool depthwise_rows_on_avx512(int id) const;
  // A 1x1 conv of one pixel (a squeeze-excite's): a matrix-vector product; arguments as conv2d_panels.
  std::string conv2d_one_pixel(int id, const std::string& w_ptr, const std::string& c_at, const std::string& gemm_out, const std::string& bias);
  std::string conv2d_depthwise(int id, const std::string& w_ptr, const std::string& gemm_out, const std::string& bias);
  // float grouped convs of 4, 8 or 16 channels a group, 3x3: the prelude's
  // rk_grouped_conv_f32, 16 output channels an AVX-512 vector (cpp_conv_grouped.h), with the
  // few-channel conv (conv2d_panels) or conv2d_planes for other machines; arguments as conv2d_panels.
  bool grouped_vectors(int id) const;
  // A conv's epilogue (and bias) as an RkChannelAffine where it is one: per-channel adds, subs and
  // muls of the conv's value, then at most one clamp or relu, written to gemm_out; where `silu`,
  // the chain may end in a SiLU of that value instead of the clamp. fold: the code that computes
  // a channel oc's scale a and shift b; lo, hi: the clamp's bounds.
  struct ChannelAffine {
    std::string fold, lo = "-INFINITY", hi = "INFINITY";
    bool relu = false, silu = false;
  };
  std::optional<ChannelAffine> plan_channel_affine(int id, const std::string& gemm_out, const std::string& bias, bool silu) const;
  bool silu_tail(const std::vector<int>& chain, size_t at, int value) const;
  // The code that fills `affine` (its arrays in scratch) each run.
  std::string channel_affine(int id, const ChannelAffine& plan);
  std::string scratch_read_only_above(const std::string& affine) const;
  std::string conv2d_grouped(int id, const std::string& w_ptr, const std::string& c_at, const std::string& gemm_out, const std::string& bias);

  // ---- emit_window.cpp
  std::string pool_kernel(int id);
  std::string pool_backward_kernel(int id);
  std::string adaptive_pool_kernel(int id);
  std::string pad_kernel(int id);
  std::string max_pool_rows(int id);    // CPU max pooling, row-wise
  bool max_pool_vectors(int id) const;  // whether the prelude's AVX-512 max pool (cpp_pool.h) takes it
  std::string window_loops(const Window& win, const Shape& in, const std::string& body, bool declare = true) const;
  std::string at4(int v, const std::string& b, const std::string& c, const std::string& y, const std::string& x) const;
  std::string load4(int v, const char* ct, const std::string& b, const std::string& c, const std::string& y, const std::string& x) const;
  std::string at_n(int v, const std::vector<std::string>& index) const;  // one index expression per dim of v
  std::string load_n(int v, const char* ct, const std::vector<std::string>& index) const;

  // ---- emit_data.cpp
  std::string copy_kernel(int id);  // a view that must be materialised
  std::string cat_kernel(int id);
  std::string index_kernel(int id);
  std::string full_kernel(int id);

  // ---- emit_scan.cpp
  std::string scan_kernel(int id);  // cumsum, cumprod, argsort, topk_indices

 private:
  void plan_groups();
  void plan_views();
  void plan_epilogues();
  void plan_cats();
  bool cat_in_place_candidate(int c) const;
  std::map<int, int> cat_prefixes() const;
  // Where node id's value is computed in kernel order: its own index, or its group's last node's.
  int kernel_position(int id) const;
  // Offsets in the workspace of the buffers of materialised nodes that are not caller outputs
  // (buffer_plan.h), appended to `placed` in node order; returns the bytes they need.
  int64_t plan_workspace(const std::map<int, int>& direct, std::vector<std::pair<int, int64_t>>& placed) const;
  std::string kernel_for_group(const std::vector<int>& ids);
  std::string kernel_for_node(int id);

  std::vector<std::string> errors_;
  int64_t workspace_bytes_ = 0;
  int64_t kernel_scratch_ = 0, max_scratch_ = 0;  // CPU: the current kernel's scratch bytes; the most any kernel takes
  int64_t kept_bytes_ = 0;                        // CPU: the kept region's size
  std::set<std::string> frozen_;
  std::vector<Unit> units_;
  std::vector<std::string> kernel_labels_;
  std::string kernel_label_;  // the label of the kernel being emitted (kernel_header)
};

}  // namespace reprokit::codegen_detail
