/*
 * hd_common.h — VEIL_HD, the qualifier of element math shared by a codelet's CPU body and its
 * CUDA body: __host__ __device__ under nvcc, nothing under a C compiler. Every <prim>_common.h
 * includes it, so one inline function is the element math of both bodies and the CPU tests
 * exercise the arithmetic the GPU runs.
 */
#ifndef VEIL_HD_COMMON_H
#define VEIL_HD_COMMON_H

#ifdef __CUDACC__
#define VEIL_HD __host__ __device__
#else
#define VEIL_HD
#endif

#endif /* VEIL_HD_COMMON_H */
