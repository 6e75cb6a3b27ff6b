// The LibTorch headers (and nlohmann-json) that the torch-using sources of stx include, precompiled once
// (cmake/stx_torch_pch.cmake). Parsing them is half of such a file's compile time: a trainer.cpp took 34 s
// without and 15 s with this header precompiled. Sources that do not reach LibTorch skip it: loading it
// costs them about 5 s.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/cuda.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/csrc/autograd/custom_function.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>
