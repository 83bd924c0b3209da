"""ONNX networks on the CPU for the learned dice reader (:mod:`vision.learned`): one network
(:class:`OnnxNet`, onnxruntime or OpenCV's dnn module) and the mean of several
(:class:`MeanNet`). Nothing is downloaded: the weights are files in ``vision/models``."""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np


class OnnxNet:
    """One ONNX network on the CPU: ``net(x)`` -> its first output.

    Runs on onnxruntime when it is installed (about twice as fast as OpenCV's dnn module on
    these nets, same outputs to 1e-6), else on ``cv2.dnn`` (e.g. 32-bit Raspberry Pi OS, for
    which onnxruntime has no wheels). onnxruntime uses ``cv2.getNumThreads()`` threads at
    creation, so ``cv2.setNumThreads(1)`` before the first read makes both run on one core.

    Args:
        path: the ``.onnx`` file.
        runtime: ``"onnxruntime"``, ``"cv2"`` or ``None`` (the first available).

    Raises:
        FileNotFoundError: no file at ``path``.
        ImportError: ``runtime="onnxruntime"`` and it is not installed.
    """

    def __init__(self, path: Path, runtime: str | None = None) -> None:
        if not Path(path).is_file():
            raise FileNotFoundError(f"ONNX model missing: {path}")
        self.path = Path(path)
        if runtime in (None, "onnxruntime"):
            try:
                import onnxruntime as ort
            except ImportError:
                if runtime == "onnxruntime":
                    raise
            else:
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = max(1, cv2.getNumThreads())
                opts.inter_op_num_threads = 1
                self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                self._input = self._session.get_inputs()[0].name
                self.runtime = "onnxruntime"
                return
        self._net = cv2.dnn.readNetFromONNX(str(path))
        self.runtime = "cv2"

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """float32 ``(N, C, H, W)`` -> the first output, float32 (shape by network)."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        if self.runtime == "onnxruntime":
            return self._session.run(None, {self._input: x})[0]
        self._net.setInput(x)
        return self._net.forward()


class MeanNet:
    """Networks of one output shape, averaged: ``net(x)`` -> the mean of their outputs.

    Args:
        nets: :class:`OnnxNet` (or any callables ``x -> np.ndarray``), at least one.

    Raises:
        ValueError: no network given.
    """

    def __init__(self, nets: list) -> None:
        if not nets:
            raise ValueError("MeanNet needs at least one network")
        self.nets = list(nets)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return sum(net(x) for net in self.nets) / len(self.nets)
