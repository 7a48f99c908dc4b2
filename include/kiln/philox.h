/*
 * Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
 * easy as 1, 2, 3", SC 2011; the Random123 library) and the DROPOUT mask
 * built on it (kiln/ops.h, docs/DROPOUT.md).
 *
 * Pure C (C99), part of the plugin SDK, used by the host's reference and by
 * the cpu plugin; the OpenCL and Vulkan plugins carry the same rounds in
 * their kernel languages, tested against this one.
 *
 * Why counter-based: a dropout mask bit must be a pure function of (seed,
 * step, site, element). A sequential generator (mt19937, a PyTorch-style
 * offset stream) makes element k depend on how many numbers were drawn
 * before it, so a mask would depend on thread counts, on the backend's work
 * split, on where a resumed run restarts and on how tensor parallelism cuts
 * a tensor. Philox maps (counter, key) to random words with no state, so any
 * work item can draw the number of any element directly, and every backend,
 * every resume and every rank draws the same mask.
 */
#ifndef KILN_PHILOX_H
#define KILN_PHILOX_H

#include <math.h>
#include <stdint.h>

/* Round multipliers and Weyl key increments of Philox4x32 (Random123). */
#define KILN_PHILOX_M0 0xD2511F53u
#define KILN_PHILOX_M1 0xCD9E8D57u
#define KILN_PHILOX_W0 0x9E3779B9u
#define KILN_PHILOX_W1 0xBB67AE85u
#define KILN_PHILOX_ROUNDS 10

/* out = Philox4x32-10(ctr, key); out may be ctr. */
static inline void kiln_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < KILN_PHILOX_ROUNDS; ++round) {
    if (round > 0) {
      k0 += KILN_PHILOX_W0;
      k1 += KILN_PHILOX_W1;
    }
    const uint64_t p0 = (uint64_t)KILN_PHILOX_M0 * c0;
    const uint64_t p1 = (uint64_t)KILN_PHILOX_M1 * c2;
    const uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    const uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0;
  out[1] = c1;
  out[2] = c2;
  out[3] = c3;
}

/* ---- the DROPOUT mask */

/* The run-time key input of DROPOUT, an i32 [4] tensor read as uint32. */
typedef struct kiln_dropout_key {
  uint32_t seed;
  uint32_t step;
  uint64_t offset; /* (uint64)offset_hi << 32 | offset_lo */
} kiln_dropout_key;

static inline kiln_dropout_key kiln_dropout_key_from(const int32_t words[4]) {
  kiln_dropout_key k;
  k.seed = (uint32_t)words[0];
  k.step = (uint32_t)words[1];
  k.offset = (uint64_t)(uint32_t)words[3] << 32 | (uint32_t)words[2];
  return k;
}

/* The global index of element e (row-major) of a tensor that is a column
 * block of a wider one: period elements of each row of stride, starting at
 * offset (all modulo 2^64). period = stride = numel and offset 0 give e. */
static inline uint64_t kiln_dropout_index(uint64_t e, uint64_t period, uint64_t stride, uint64_t offset) {
  return e / period * stride + e % period + offset;
}

/* The 32 random bits of global index g: word g % 4 of the Philox block g / 4. */
static inline uint32_t kiln_dropout_bits(kiln_dropout_key k, uint32_t site, uint64_t g) {
  const uint64_t block = g >> 2;
  const uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), k.step, 0u};
  const uint32_t key[2] = {k.seed, site};
  uint32_t out[4];
  kiln_philox4x32_10(ctr, key, out);
  return out[g & 3u];
}

/* An element is kept iff its top 24 random bits reach this, so P(drop) is p
 * rounded to a multiple of 2^-24 (a p within 2^-25 of 1 drops everything). */
static inline uint32_t kiln_dropout_threshold(double p) { return (uint32_t)llround(p * 16777216.0); }

static inline int kiln_dropout_keep(uint32_t bits, uint32_t threshold) { return (bits >> 8) >= threshold; }

/* The factor kept elements are multiplied by, rounded once from double:
 * kernels multiply by it and never divide (OpenCL's fp32 division is not
 * correctly rounded). */
static inline float kiln_dropout_scale(double p) { return (float)(1.0 / (1.0 - p)); }

#endif /* KILN_PHILOX_H */
