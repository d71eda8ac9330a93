// emu_cache_ops.cpp -- cache_ops.cu reshape_and_cache / gather_cached_kv / copy_blocks kernels,
// run through cuda_emu.h, byte-exact against cache_ops_ref.c, fp8 caches included
// (quantize x / kv_scale on write, fp8 * kv_scale on gather).  Built by run.sh.
#include "co_emu.cpp"
#include <algorithm>
#include <cstdio>
#include <vector>
static void fill(void *p, size_t n, unsigned s) { unsigned char *c = (unsigned char *)p; for (size_t i = 0; i < n; i++) { s = s * 1103515245u + 12345u; c[i] = (unsigned char)((s >> 16) & 0x3f); } }
// One case: reshape_and_cache into a filled cache (CUDA vs the C reference, byte-exact), then
// gather_cached_kv back from it (likewise); key / val are T rows of `stride` elements.
// Returns the failures (0 or more).
static int round_trip(const pb_kv_cache_shape &c, const void *key, const void *val, int stride,
                      const int64_t *slots, int T, unsigned seed_k, unsigned seed_v) {
    size_t es = pb_kv_dtype_size(c.dtype), cb = (size_t)c.num_blocks * pb_kv_block_bytes(&c);
    void *kc = aligned_alloc(16, cb), *vc = aligned_alloc(16, cb), *kc2 = aligned_alloc(16, cb), *vc2 = aligned_alloc(16, cb);
    fill(kc, cb, seed_k); fill(vc, cb, seed_v); memcpy(kc2, kc, cb); memcpy(vc2, vc, cb);
    pb_reshape_and_cache_ref(&c, kc, vc, key, val, stride, stride, slots, T);
    int st = pb_reshape_and_cache_cuda(&c, kc2, vc2, key, val, stride, stride, slots, T, nullptr);
    int f = st != PB_OK || memcmp(kc, kc2, cb) || memcmp(vc, vc2, cb);
    size_t dn = es * (size_t)T * c.num_kv_heads * c.head_size;
    void *rk = aligned_alloc(16, dn), *rv = aligned_alloc(16, dn), *gk = aligned_alloc(16, dn), *gv = aligned_alloc(16, dn);
    pb_gather_cached_kv_ref(&c, rk, rv, kc, vc, slots, T);
    st = pb_gather_cached_kv_cuda(&c, gk, gv, kc, vc, slots, T, nullptr);
    f += st != PB_OK || memcmp(rk, gk, dn) || memcmp(rv, gv, dn);
    free(kc); free(vc); free(kc2); free(vc2); free(rk); free(rv); free(gk); free(gv);
    return f;
}

int main() {
    int fails = 0;
    int bss[5] = {1, 8, 16, 32, 256};
    for (int bi = 0; bi < 5; bi++)
        for (int di = 0; di < 3; di++) {
            const int T = 40, Hkv = 3, D = 64, stride = 3 * Hkv * D;
            pb_kv_cache_shape c = {(T + bss[bi] - 1) / bss[bi] + 3, Hkv, D, bss[bi], (pb_kv_dtype)di, PB_KV_CACHE_AUTO, 0.0f};
            size_t es = pb_kv_dtype_size(c.dtype);
            void *key = aligned_alloc(16, es * T * stride), *val = aligned_alloc(16, es * T * stride);
            fill(key, es * T * stride, 3 + bi); fill(val, es * T * stride, 4 + di);
            int64_t slots[40];
            for (int i = 0; i < T; i++) slots[i] = (int64_t)(((i / c.block_size) * 7) % c.num_blocks) * c.block_size + i % c.block_size;
            slots[3] = -1;
            int f1 = round_trip(c, key, val, stride, slots, T, 1, 2);
            printf("reshape/gather bs%d %s %s\n", bss[bi], pb_kv_dtype_name(c.dtype), f1 ? "FAIL" : "ok");
            fails += f1;
            free(key); free(val);
        }
    for (int fi = 0; fi < 2; fi++)               // fp8 caches: e4m3 / e5m2, fp16 / bf16 activations
        for (int di = 1; di <= 2; di++)
            for (int bs : {1, 16, 32}) {
                const int T = 33, Hkv = 2, D = 64, stride = 3 * Hkv * D;
                pb_kv_cache_shape c = {(T + bs - 1) / bs + 3, Hkv, D, bs, (pb_kv_dtype)di,
                                       fi ? PB_KV_CACHE_FP8_E5M2 : PB_KV_CACHE_FP8_E4M3, fi ? 0.0625f : 1.5f};
                size_t es = pb_kv_dtype_size(c.dtype);
                void *key = aligned_alloc(16, es * T * stride), *val = aligned_alloc(16, es * T * stride);
                std::vector<float> f((size_t)T * stride);
                unsigned s = 77 + (unsigned)bs;
                for (auto &x : f) { s = s * 1103515245u + 12345u; x = ((int)((s >> 8) & 0xffff) - 32768) / 256.0f; }  // |x| < 128
                pb_kv_from_f32(key, c.dtype, f.data(), f.size());
                std::reverse(f.begin(), f.end());
                pb_kv_from_f32(val, c.dtype, f.data(), f.size());
                int64_t slots[33];
                for (int i = 0; i < T; i++) slots[i] = (int64_t)(((i / bs) * 5) % c.num_blocks) * bs + i % bs;
                slots[7] = -1;
                int f1 = round_trip(c, key, val, stride, slots, T, 5, 6);
                printf("reshape/gather fp8 %s bs%d %s %s\n", pb_kv_cache_dtype_name(c.kv_cache_dtype), bs,
                       pb_kv_dtype_name(c.dtype), f1 ? "FAIL" : "ok");
                fails += f1;
                free(key); free(val);
            }
    for (int fp8 = 0; fp8 <= 1; fp8++) {          // copy_blocks: fp16 blocks and (half as large) fp8 blocks
        pb_kv_cache_shape c = {64, 2, 64, 16, PB_KV_F16, fp8 ? PB_KV_CACHE_FP8_E4M3 : PB_KV_CACHE_AUTO, 1.0f};
        size_t bb = pb_kv_block_bytes(&c), tb = bb * 64;
        void *hk[3], *hv[3], *dk[3], *dv[3];
        for (int l = 0; l < 3; l++) {
            hk[l] = aligned_alloc(16, tb); hv[l] = aligned_alloc(16, tb); dk[l] = aligned_alloc(16, tb); dv[l] = aligned_alloc(16, tb);
            fill(hk[l], tb, 10 + l); fill(hv[l], tb, 20 + l); memcpy(dk[l], hk[l], tb); memcpy(dv[l], hv[l], tb);
        }
        pb_block_pair pairs[6] = {{1, 40}, {1, 41}, {2, 42}, {10, 50}, {11, 51}, {63, 0}};
        pb_copy_blocks_ref(hk, hv, 3, pairs, 6, bb);
        int st = pb_copy_blocks_cuda(dk, dv, 3, pairs, 6, bb, nullptr);
        int f1 = st != PB_OK;
        for (int l = 0; l < 3; l++) f1 += memcmp(hk[l], dk[l], tb) != 0 || memcmp(hv[l], dv[l], tb) != 0;
        printf("copy_blocks %s %s\n", fp8 ? "fp8" : "fp16", f1 ? "FAIL" : "ok");
        fails += f1;
    }
    printf("%s\n", fails ? "EMU CACHE FAIL" : "EMU CACHE OK");
    return fails != 0;
}
