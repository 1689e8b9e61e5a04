# A small PyTorch net with a planted pattern (torch.sin(h) * 3.0 between two Linear layers),
# exported to net.onnx: the model of the README's `reprokit reduce` example.
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 8)
    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.sin(h) * 3.0
        h = torch.tanh(self.fc2(h))
        return torch.softmax(h + x[:, :8], dim=-1)
torch.manual_seed(0)
# The TorchScript exporter, which needs nothing beyond torch: torch 2.9 and later default to the
# torch.export-based one (dynamo=True), which needs onnxscript; torch 1.x has no such argument.
import inspect
kwargs = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
torch.onnx.export(Net().eval(), torch.randn(4, 16), "net.onnx", opset_version=13, **kwargs)
