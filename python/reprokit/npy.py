"""Tensors as reprokit reads and writes them: .npy files, bfloat16 as its uint16 bit pattern."""
import numpy as np
import torch


def save_npy(path, t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        np.save(path, t.view(torch.int16).numpy().astype(np.uint16))
    else:
        np.save(path, t.numpy())


def load_npy(path, dtype):
    """The tensor in `path` as `dtype` (no pickled objects)."""
    a = np.load(path, allow_pickle=False)
    if dtype == torch.bfloat16:
        return torch.from_numpy(a.astype(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.array(a, order="C", copy=True)).to(dtype)  # ascontiguousarray makes 0-d arrays 1-d
