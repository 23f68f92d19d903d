#include "specs/minimax_m3/reference/Mxfp8Reference.h"

#include <cmath>
#include <limits>

namespace monogen::specs::minimax_m3 {

uint8_t mxfp8ScaleOf(float amax) {
  if (amax == 0.0f) return 0;
  if (std::isinf(amax)) return 255;
  for (int c = 1; c < 255; ++c)
    if (static_cast<double>(amax) <= std::ldexp(448.0, c - 127)) return static_cast<uint8_t>(c);
  return 255;  // unreachable for a finite f32
}

uint8_t e4m3RoundNearestEven(double y) {
  if (std::isnan(y)) return 0x7f;
  const uint8_t sign = std::signbit(y) ? 0x80 : 0x00;
  const double a = std::fabs(y);
  if (a >= 448.0) return sign | 0x7e;
  int n;  // the code's magnitude: subnormals are n 2^-9 (n < 8); a normal's step is 2^(E - 3)
  if (a < 0x1p-6) {
    n = static_cast<int>(std::nearbyint(a * 0x1p9));  // the default rounding: to nearest, ties even
  } else {
    int e2;
    std::frexp(a, &e2);  // a = f 2^e2, f in [0.5, 1): E = e2 - 1
    const int E = e2 - 1;
    const int m = static_cast<int>(std::nearbyint(std::ldexp(a, 3 - E)));  // 8 .. 16
    n = ((E + 7) << 3) + (m - 8);
  }
  return static_cast<uint8_t>(sign | (n > 0x7e ? 0x7e : n));
}

Mxfp8Block mxfp8QuantizeBlock(const float* x) {
  Mxfp8Block blk;
  float amax = 0.0f;
  for (int i = 0; i < kMxfp8Block; ++i)
    if (!std::isnan(x[i])) amax = std::fmax(amax, std::fabs(x[i]));
  blk.scale = mxfp8ScaleOf(amax);
  for (int i = 0; i < kMxfp8Block; ++i) {
    const double v = static_cast<double>(x[i]);
    const double y = blk.scale == 255 ? v * 0.0 : std::ldexp(v, 127 - blk.scale);
    blk.codes[i] = e4m3RoundNearestEven(y);
  }
  return blk;
}

void mxfp8Quantize(const float* x, size_t n, uint8_t* codes, uint8_t* scales) {
  for (size_t b = 0; b < n / kMxfp8Block; ++b) {
    const Mxfp8Block blk = mxfp8QuantizeBlock(x + b * kMxfp8Block);
    scales[b] = blk.scale;
    for (int i = 0; i < kMxfp8Block; ++i) codes[b * kMxfp8Block + i] = blk.codes[i];
  }
}

double mxfp8Dequant(uint8_t code, uint8_t scale) {
  if ((code & 0x7f) == 0x7f || scale == 255) return std::numeric_limits<double>::quiet_NaN();
  const int e = (code >> 3) & 0xf, m = code & 7;
  const double mag = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return std::ldexp((code & 0x80) ? -mag : mag, scale - 127);
}

}  // namespace monogen::specs::minimax_m3
