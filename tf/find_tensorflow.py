"""Prints where TensorFlow is installed and its release, as TF_Version() will report it at run
time: "DIR;VERSION" on one line, or nothing when this Python has no TensorFlow.

CMake runs it to decide whether to build anvil's TensorFlow glue (tf/anvil_tf_glue.cc). It
loads TensorFlow's two libraries with ctypes instead of importing the Python package (about
1 s instead of 10) and never fails: any problem means "no TensorFlow"."""

import ctypes
import importlib.util
import os
import sys


def main():
    try:
        spec = importlib.util.find_spec("tensorflow")
        if spec is None or not spec.submodule_search_locations:
            return
        tf_dir = spec.submodule_search_locations[0]
        framework = os.path.join(tf_dir, "libtensorflow_framework.so.2")
        cc = os.path.join(tf_dir, "libtensorflow_cc.so.2")
        if not (os.path.exists(framework) and os.path.exists(cc)):
            return
        ctypes.CDLL(framework, mode=ctypes.RTLD_GLOBAL)
        version = ctypes.CDLL(cc).TF_Version
        version.restype = ctypes.c_char_p
        sys.stdout.write("%s;%s\n" % (tf_dir, version().decode()))
    except Exception as e:  # noqa: BLE001 - any failure means no usable TensorFlow
        sys.stderr.write("find_tensorflow: %s\n" % e)


if __name__ == "__main__":
    main()
