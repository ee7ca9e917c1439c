# lit configuration for COMET's FileCheck tests.
import os
import lit.formats
from lit.llvm import llvm_config

config.name = "COMET"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "unittests", "install", "fixtures", "fuzz"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.comet_obj_root, "test")

llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()
config.substitutions.append(("%comet_src", config.comet_src_root))
config.substitutions.append(("%python", config.python_executable or "python3"))

tool_dirs = [config.comet_tools_dir, config.llvm_tools_dir]
llvm_config.add_tool_substitutions(
    ["comet-opt", "comet-codec", "comet-train", "comet-compile", "comet-run"],
    tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
if config.comet_have_cuda:
    config.available_features.add("cuda")
# A machine with a CUDA device (its driver lists one): the tests of
# --device cuda's refusal on a machine without one do not apply.
try:
    import subprocess
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True,
                          timeout=60).stdout
    if "GPU " in gpus:
        config.available_features.add("cuda-device")
except (OSError, subprocess.SubprocessError):
    pass
