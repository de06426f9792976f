/* PLACEHOLDER: CUDA body of the flat relayout codelet (codelets/flatop.c). */
#include "codelets/cuda/cuda_common.cuh"
