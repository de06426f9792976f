/*
 * cuda/pool_cuda_internal.h — PLACEHOLDER: the StarPU CUDA bodies of the pool codelets.
 */
#ifndef VEIL_TASKS_CUDA_POOL_CUDA_INTERNAL_H
#define VEIL_TASKS_CUDA_POOL_CUDA_INTERNAL_H

#endif
