/*
 * onnx_lenet_data — the two file steps of the LeNet ONNX round trip (bench/onnx_lenet.sh, and
 * tests/test_onnx_lenet.sh through it): `images DIR N OUT.npy` writes the first N Fashion-MNIST
 * test images of DIR as a float64 .npy of shape (N, 1, 28, 28), scaled as lenet_fmnist infer
 * scales them (veil_dataset_image_f64); `compare PRED.txt CLASSES.npy N` compares the classes
 * lenet_fmnist infer --predictions wrote (one a line) with those veil-onnx run wrote, prints
 * "images=N agree=K agreement=P" and exits 0 when all N agree, 1 otherwise.
 */
#include "config.h"

#include "veil.h"
#include "veil/onnx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int images(const char *dir, size_t n, const char *out)
{
    char img[4096], lab[4096];
    snprintf(img, sizeof img, "%s/t10k-images-idx3-ubyte.gz", dir);
    snprintf(lab, sizeof lab, "%s/t10k-labels-idx1-ubyte.gz", dir);
    veil_dataset_t *d = veil_dataset_load_idx(img, lab, 1);
    if (!d || veil_dataset_count(d) < n || veil_dataset_rows(d) != 28 ||
        veil_dataset_cols(d) != 28) {
        fprintf(stderr, "onnx_lenet_data: %s: %s\n", img,
                d ? "fewer images than asked, or not 28 x 28" : veil_last_error());
        veil_dataset_destroy(&d);
        return 1;
    }
    struct veil_onnx_tensor t = {.ndim = 4, .dims = {n, 1, 28, 28}, .numel = n * 784};
    snprintf(t.name, sizeof t.name, "image");
    int rc = (t.values = malloc(t.numel * sizeof(double))) ? VEIL_OK : VEIL_ERR_NOMEM;
    for (size_t i = 0; rc == VEIL_OK && i < n; i++)
        rc = veil_dataset_image_f64(d, i, t.values + i * 784);
    if (rc == VEIL_OK)
        rc = veil_onnx_tensor_write(out, &t);
    if (rc != VEIL_OK)
        fprintf(stderr, "onnx_lenet_data: %s\n", veil_last_error());
    free(t.values);
    veil_dataset_destroy(&d);
    return rc == VEIL_OK ? 0 : 1;
}

static int compare(const char *pred, const char *classes, size_t n)
{
    struct veil_onnx_tensor t;
    if (veil_onnx_tensor_read(classes, &t) != VEIL_OK) {
        fprintf(stderr, "onnx_lenet_data: %s\n", veil_last_error());
        return 1;
    }
    FILE *f = fopen(pred, "r");
    size_t agree = 0, i = 0;
    int c;
    while (f && i < n && fscanf(f, "%d", &c) == 1) {
        agree += i < t.numel && (double)c == t.values[i];
        i++;
    }
    if (f)
        fclose(f);
    printf("images=%zu agree=%zu agreement=%.3f\n", n, agree,
           n ? 100.0 * (double)agree / (double)n : 0.0);
    if (i != n || t.numel != n)
        fprintf(stderr, "onnx_lenet_data: %s holds %zu classes, %s %zu; %zu expected\n", pred, i,
                classes, t.numel, n);
    veil_onnx_tensor_free(&t);
    return agree == n && i == n && t.numel == n ? 0 : 1;
}

int main(int argc, char **argv)
{
    long n = argc == 5 ? atol(argv[3]) : 0;
    if (argc == 5 && n > 0 && !strcmp(argv[1], "images"))
        return images(argv[2], (size_t)n, argv[4]);
    n = argc == 5 ? atol(argv[4]) : 0;
    if (argc == 5 && n > 0 && !strcmp(argv[1], "compare"))
        return compare(argv[2], argv[3], (size_t)n);
    fprintf(stderr, "usage: onnx_lenet_data images DATA_DIR N OUT.npy\n"
                    "       onnx_lenet_data compare PREDICTIONS.txt CLASSES.npy N\n");
    return 2;
}
