/*
 * im2col_common.h — the convolution geometry shared by the im2col/col2im codelets, their future
 * CUDA bodies and the plaintext reference. Plain C, no StarPU.
 */
#ifndef VEIL_IM2COL_COMMON_H
#define VEIL_IM2COL_COMMON_H

#include <stdint.h>

/** NCHW convolution geometry (dilation 1, zero padding), passed by value to tasks. */
struct veil_im2col_geom {
    uint32_t n, c, h, w; /* batch, channels, height, width of the image (all >= 1) */
    uint32_t kh, kw;     /* kernel height and width (>= 1) */
    uint32_t sh, sw;     /* strides (>= 1) */
    uint32_t ph, pw;     /* zero padding on each side (ph < kh, pw < kw) */
};

#endif /* VEIL_IM2COL_COMMON_H */
