"""A training loop as ONNX Runtime's on-device training docs write one:
CheckpointState, Module, Optimizer and LinearLRScheduler, train and eval
epochs, save_checkpoint, export_model_for_inferencing, then the exported
model in an InferenceSession. test_training_api.py runs this text as it is
and with its one import line changed to comet.training.api, and compares
the JSON it prints.

    python ort_example_loop.py ARTIFACTS OUT_DIR
"""
import json
import sys

import numpy as np
import onnxruntime
from onnxruntime.training.api import CheckpointState, LinearLRScheduler, Module, Optimizer

artifacts, out = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
train_x = rng.random((200, 1, 28, 28), dtype=np.float32)
train_y = rng.integers(0, 10, 200).astype(np.int64)
test_x = rng.random((64, 1, 28, 28), dtype=np.float32)
test_y = rng.integers(0, 10, 64).astype(np.int64)
batch_size = 32

state = CheckpointState.load_checkpoint(f"{artifacts}/checkpoint")
model = Module(f"{artifacts}/training_model.onnx", state, f"{artifacts}/eval_model.onnx")
optimizer = Optimizer(f"{artifacts}/optimizer_model.onnx", model)
scheduler = LinearLRScheduler(optimizer, warmup_step_count=2, total_step_count=20,
                              initial_lr=0.005)


def train_epoch():
    model.train()
    losses = []
    for i in range(0, len(train_x), batch_size):  # 6 batches of 32, then 8
        loss = model(train_x[i:i + batch_size], train_y[i:i + batch_size])
        optimizer.step()
        scheduler.step()
        model.lazy_reset_grad()
        losses.append(float(loss))
    return losses


def eval_epoch():
    model.eval()
    return [float(model(test_x[i:i + batch_size], test_y[i:i + batch_size]))
            for i in range(0, len(test_x), batch_size)]


result = {"train": [], "eval": [], "lr": []}
for epoch in range(2):
    result["train"] += train_epoch()
    result["eval"] += eval_epoch()
    result["lr"].append(optimizer.get_learning_rate())
result["inputs"] = model.input_names()
result["outputs"] = model.output_names()

state.properties["epochs"] = 2
CheckpointState.save_checkpoint(state, f"{out}/checkpoint", include_optimizer_state=True)
model.export_model_for_inferencing(f"{out}/inference.onnx", ["logits"])

session = onnxruntime.InferenceSession(f"{out}/inference.onnx",
                                       providers=["CPUExecutionProvider"])
result["logits"] = session.run(None, {"input": test_x[:16]})[0].tolist()
print(json.dumps(result))
