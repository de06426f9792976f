/*
 * cuda/compare_cuda_internal.h — PLACEHOLDER: the StarPU CUDA bodies of the compare codelets.
 */
#ifndef VEIL_TASKS_CUDA_COMPARE_CUDA_INTERNAL_H
#define VEIL_TASKS_CUDA_COMPARE_CUDA_INTERNAL_H

#endif
