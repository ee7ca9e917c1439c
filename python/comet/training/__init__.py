"""COMET's counterpart of onnxruntime.training: `comet.training.api` trains
ONNX Runtime training artifacts with ORT's own Python API, through COMET
with its activations compressed (docs/python.md)."""
