// copy_element(to, from) for copy2d.comp and permute.comp built with
// KILN_16BIT: a bit copy between bindings of one dtype (16 or 32 bits, so an
// i32 or a NaN's payload passes untouched), else a CAST's conversion through
// f32 bits, rounding to nearest even into a 16-bit destination (bf16 <-> f16
// goes through f32 exactly as the reference's CAST). Needs bindings Dst/Src
// (uint dst[], src[]) and their 16-bit views dst16[], src16[].
void copy_element(uint to, uint from) {
  const uint dd = kiln_dtype(0u), sd = kiln_dtype(1u);
  if (dd == sd) {
    if (dd == 0u)
      dst[to] = src[from];
    else
      dst16[to] = src16[from];
    return;
  }
  const uint bits = sd == 0u ? src[from] : (sd == 1u ? bf16_to_f32(uint(src16[from])) : f16_to_f32(uint(src16[from])));
  if (dd == 0u)
    dst[to] = bits;
  else
    dst16[to] = uint16_t(dd == 1u ? f32_to_bf16(bits) : f32_to_f16(bits));
}
