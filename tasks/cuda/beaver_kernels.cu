/* PLACEHOLDER: CUDA bodies of tasks/beaver_kernels.c. */
#include "tasks/cuda/beaver_cuda_internal.h"
