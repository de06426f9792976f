/*
 * cuda/beaver_cuda_internal.h — PLACEHOLDER: the StarPU CUDA bodies of the beaver codelets.
 */
#ifndef VEIL_TASKS_CUDA_BEAVER_CUDA_INTERNAL_H
#define VEIL_TASKS_CUDA_BEAVER_CUDA_INTERNAL_H

#endif
