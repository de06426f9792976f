/*
 * test_data_weights.c — the weights file: a round trip of every dtype (values, names, shapes,
 * model name), the shape and model mismatch messages, and malformed headers (bad JSON, escapes,
 * duplicates, unknown dtype or field, overlapping / out-of-range / wrong-sized offsets, unused or
 * trailing data bytes, trailing garbage, deep nesting, header length beyond the file or the cap), each a clear error; then
 * 3000 seeded random mutations of a valid file, which must never crash (run under ASan too).
 */
#include "config.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Builds "8-byte length + json + data" in buf; returns its length. */
static size_t build(uint8_t *buf, const char *json, const void *data, size_t dlen)
{
    size_t hl = strlen(json);
    for (int i = 0; i < 8; i++)
        buf[i] = (uint8_t)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, json, hl);
    if (dlen)
        memcpy(buf + 8 + hl, data, dlen);
    return 8 + hl + dlen;
}

static void bad(const char *json, size_t dlen, const char *needle)
{
    static uint8_t buf[4096];
    static uint8_t zero[256];
    size_t n = build(buf, json, zero, dlen);
    veil_weights_t *w = veil_weights_parse(buf, n, "bad.vw");
    VT_CHECK(w == NULL, "accepted: %s", json);
    if (w) {
        veil_weights_destroy(&w);
        return;
    }
    veil_test_log("%-60.60s -> %s", json, veil_last_error());
    VT_CHECK(strstr(veil_last_error(), needle) != NULL, "%s: message '%s' lacks '%s'", json,
             veil_last_error(), needle);
}

int main(void)
{
    char dir[] = "/tmp/veil-weights-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[128];
    snprintf(path, sizeof(path), "%s/lenet5.vw", dir);

    double conv[6 * 1 * 5 * 5];
    float bias[6];
    int64_t steps[2] = { -5, 1LL << 40 };
    uint64_t big[1] = { 12345 };
    for (int i = 0; i < 150; i++)
        conv[i] = (i - 75) / 7.0;
    for (int i = 0; i < 6; i++)
        bias[i] = (float)i * 0.25f;
    struct veil_weights_tensor t[4] = {
        { "conv1.weight", VEIL_DTYPE_F64, 4, { 6, 1, 5, 5 }, conv },
        { "conv1.bias \"q\"\n", VEIL_DTYPE_F32, 1, { 6 }, bias },
        { "steps", VEIL_DTYPE_I64, 1, { 2 }, steps },
        { "scalar", VEIL_DTYPE_U64, 0, { 0 }, big },
    };
    VT_CHECK(veil_weights_write(path, "lenet5", t, 4) == VEIL_OK, "write: %s", veil_last_error());
    veil_weights_t *w = veil_weights_open(path);
    VT_CHECK(w != NULL, "open: %s", veil_last_error());
    if (w) {
        VT_CHECK(veil_weights_count(w) == 4, "count %zu", veil_weights_count(w));
        for (size_t i = 0; i < 4; i++)
            VT_CHECK(veil_weights_name(w, i) && !strcmp(veil_weights_name(w, i), t[i].name),
                     "name %zu", i);
        VT_CHECK(veil_weights_model(w) && !strcmp(veil_weights_model(w), "lenet5"), "model");
        VT_CHECK(veil_weights_check_model(w, "lenet5") == VEIL_OK, "model check");
        VT_CHECK(veil_weights_check_model(w, "mlp") == VEIL_ERR_MISMATCH &&
                     strstr(veil_last_error(), "is for model 'lenet5', not 'mlp'"),
                 "model mismatch: %s", veil_last_error());
        double got[150];
        size_t d4[4] = { 6, 1, 5, 5 }, d4b[4] = { 6, 3, 5, 5 }, d1[1] = { 6 }, d2[1] = { 2 };
        VT_CHECK(veil_weights_read_f64(w, "conv1.weight", 4, d4, got) == VEIL_OK &&
                     memcmp(got, conv, sizeof(conv)) == 0, "conv1.weight values");
        VT_CHECK(veil_weights_read_f64(w, "conv1.weight", 4, d4b, got) == VEIL_ERR_SHAPE,
                 "shape mismatch accepted");
        char want[256];
        snprintf(want, sizeof(want), "weights file %s: tensor 'conv1.weight' has shape "
                 "[6,1,5,5], the model expects [6,3,5,5]", path);
        VT_CHECK(!strcmp(veil_last_error(), want), "message '%s'", veil_last_error());
        VT_CHECK(veil_weights_read_f64(w, t[1].name, 1, d1, got) == VEIL_OK && got[5] == 1.25,
                 "F32 values");
        VT_CHECK(veil_weights_read_f64(w, "steps", 1, d2, got) == VEIL_OK && got[0] == -5 &&
                     got[1] == (double)(1LL << 40), "I64 values");
        VT_CHECK(veil_weights_read_f64(w, "scalar", 0, NULL, got) == VEIL_OK && got[0] == 12345,
                 "U64 scalar");
        VT_CHECK(veil_weights_read_f64(w, "nope", 0, NULL, got) == VEIL_ERR_INVAL &&
                     strstr(veil_last_error(), "no tensor 'nope'"), "absent tensor");
        enum veil_dtype dt;
        int nd;
        size_t dims[VEIL_WEIGHTS_MAX_DIMS];
        VT_CHECK(veil_weights_info(w, "conv1.weight", &dt, &nd, dims) == VEIL_OK &&
                     dt == VEIL_DTYPE_F64 && nd == 4 && dims[1] == 1, "info");
    }

    /* Mutations of the valid file: never a crash, and every accepted mutant stays readable. */
    FILE *f = fopen(path, "rb");
    static uint8_t orig[8192], mut[8192];
    size_t len = f ? fread(orig, 1, sizeof(orig), f) : 0;
    if (f)
        fclose(f);
    VT_CHECK(len > 8 && len < sizeof(orig), "file length %zu", len);
    uint64_t rnd[3000 * 3];
    veil_test_random(77, rnd, 3000 * 3);
    size_t accepted = 0;
    for (int k = 0; k < 3000 && len > 8; k++) {
        memcpy(mut, orig, len);
        size_t hl = (size_t)orig[0] | (size_t)orig[1] << 8;
        size_t at = (k & 1) ? 8 + rnd[3 * k] % hl : rnd[3 * k] % len;
        mut[at] = (uint8_t)rnd[3 * k + 1];
        size_t cut = (k % 7 == 0) ? rnd[3 * k + 2] % len : len;
        veil_weights_t *m = veil_weights_parse(mut, cut, "mutant");
        if (m) {
            accepted++;
            double buf[150];
            for (size_t i = 0; i < veil_weights_count(m); i++) {
                int nd;
                size_t dims[VEIL_WEIGHTS_MAX_DIMS];
                size_t numel = 1;
                veil_weights_info(m, veil_weights_name(m, i), NULL, &nd, dims);
                for (int d = 0; d < nd; d++)
                    numel *= dims[d];
                if (numel <= 150)
                    veil_weights_read_f64(m, veil_weights_name(m, i), nd, dims, buf);
            }
            veil_weights_destroy(&m);
        } else {
            VT_CHECK(veil_last_error()[0] != '\0', "mutant %d refused without a message", k);
        }
    }
    veil_test_log("%zu of 3000 mutants accepted", accepted);
    veil_weights_destroy(&w);

    const char *ok = "{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}";
    uint8_t tmp[256];
    w = veil_weights_parse(tmp, build(tmp, ok, "0123456789abcdef", 16), "ok");
    VT_CHECK(w && veil_weights_model(w) == NULL, "minimal file: %s", veil_last_error());
    VT_CHECK(w && veil_weights_check_model(w, "mlp") == VEIL_ERR_MISMATCH, "no model accepted");
    veil_weights_destroy(&w);
    w = veil_weights_parse(tmp, build(tmp, "{\"\\u00e9\\ud83d\\ude00\":{\"dtype\":\"U64\","
                                      "\"shape\":[],\"data_offsets\":[0,8]}}  ", "01234567", 8),
                           "escapes");
    VT_CHECK(w && !strcmp(veil_weights_name(w, 0), "\xc3\xa9\xf0\x9f\x98\x80"), "escapes: %s",
             w ? veil_weights_name(w, 0) : veil_last_error());
    veil_weights_destroy(&w);

    bad("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
        "unknown dtype 'F16'");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
        "\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[16,32]}}", 32, "appears twice");
    bad("{\"a\":{\"dtype\":\"F64\",\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
        "duplicate field 'dtype'");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16],\"x\":1}}", 16,
        "unknown field 'x'");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2]}}", 16, "lacks data_offsets");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
        "\"b\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]}}", 24, "overlap");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 8,
        "outside the data area of 8 bytes");
    /* strict: the tensors tile the data area, nothing unused, nothing after (issue 18) */
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}", 17,
        "1 trailing bytes after the last tensor's data");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[8,24]}}", 24,
        "8 unused bytes in the data area before tensor 'a'");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[0,16]}}", 16,
        "span 16 bytes, its dtype and shape need 24");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[4294967296,4294967296,4294967296],"
        "\"data_offsets\":[0,16]}}", 16, "shape too large");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[99999999999999999999],\"data_offsets\":[0,16]}}", 16,
        "integer too large");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[1,2,3,4,5,6,7,8,9],\"data_offsets\":[0,16]}}", 16,
        "more than 8 entries");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[-2],\"data_offsets\":[0,16]}}", 16,
        "non-negative integer");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2.0],\"data_offsets\":[0,16]}}", 16, "only integers");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[02],\"data_offsets\":[0,16]}}", 16, "leading zero");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}x", 16,
        "trailing bytes");
    bad("{\"a\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]}}{}", 16,
        "trailing bytes");
    bad("{\"a\":{\"dtype\":{\"x\":{}},\"shape\":[2],\"data_offsets\":[0,16]}}", 16,
        "expected '\"'");
    bad("{\"a\":[[[[[[]]]]]]}", 0, "expected '{'");
    bad("{\"__metadata__\":{\"model\":{\"deep\":1}}}", 0, "expected '\"'");
    bad("{\"__metadata__\":{\"model\":\"a\",\"model\":\"b\"}}", 0, "duplicate metadata key");
    bad("{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate __metadata__");
    bad("{\"a\\q\":{}}", 0, "unknown escape");
    bad("{\"a\\ud800\":{}}", 0, "surrogate");
    bad("{\"a\\u0000\":{}}", 0, "\\u0000");
    bad("{\"a\n\":{}}", 0, "control character");
    bad("{\"a", 0, "unterminated string");
    bad("{\"a\":{\"dtype\":\"F64\"", 0, "expected '}'");
    bad("", 0, "header length 0");
    /* no tensor at all (found by fuzz_weights under UBSan: memcpy from the empty table's NULL):
     * data after it is refused, and without data it loads empty (below) */
    bad("{}", 8, "8 trailing bytes");
    {
        static uint8_t buf[16];
        size_t n = build(buf, "{}", NULL, 0);
        veil_weights_t *we = veil_weights_parse(buf, n, "empty.vw");
        VT_CHECK(we != NULL && veil_weights_count(we) == 0, "a header with no tensor: %s",
                 we ? "tensors" : veil_last_error());
        veil_weights_destroy(&we);
    }
    bad("{\"\":{\"dtype\":\"F64\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "empty tensor name");

    /* Header length fields. */
    uint8_t hdr[16] = { 0 };
    hdr[0] = 200;
    VT_CHECK(veil_weights_parse(hdr, 16, "len") == NULL &&
                 strstr(veil_last_error(), "header length 200 but only 8 bytes follow"),
             "header beyond file: %s", veil_last_error());
    memset(hdr, 0, 8);
    hdr[4] = 1; /* 4 GiB */
    VT_CHECK(veil_weights_parse(hdr, 16, "cap") == NULL && strstr(veil_last_error(), "must be 1.."),
             "header above cap: %s", veil_last_error());
    VT_CHECK(veil_weights_parse(hdr, 5, "short") == NULL && strstr(veil_last_error(), "too short"),
             "short file: %s", veil_last_error());
    VT_CHECK(veil_weights_open("/nonexistent/x.vw") == NULL &&
                 strstr(veil_last_error(), "/nonexistent/x.vw"), "missing file");

    /* Writer refusals: duplicate names leave no file behind. */
    char p2[160];
    snprintf(p2, sizeof(p2), "%s/dup.vw", dir);
    struct veil_weights_tensor d2[2] = { t[2], t[2] };
    VT_CHECK(veil_weights_write(p2, "m", d2, 2) == VEIL_ERR_INVAL && access(p2, F_OK) != 0,
             "duplicate names written");
    unlink(path);
    rmdir(dir);
    return veil_test_status();
}
