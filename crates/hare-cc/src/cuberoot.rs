//! CUBIC's integer cube roots, as `cubic_root()` of the two eras computes them.
//!
//! - 2.6.20 (9eb2d627190 "use Newton-Raphson"): start at `1 << (fls64(a) / 3)` and iterate
//!   `x = (2x + a / (x * x)) / 3` until the change is at most 1. The kernel computes `x * x`
//!   in 32 bits: for CUBIC's `a = cube_factor * d` the root equals the 64-bit one for every
//!   `d = last_max - cwnd` below 52,481, and from there the 32-bit square is 0 (a divide by
//!   zero; replaced in 2.6.22). hare computes `x * x` in 64 bits (the kernel's value wherever
//!   it has one) and reports, through [`CubeRoot::overflowed`], when the kernel's 32-bit
//!   product would have wrapped.
//! - 2.6.22+ (7e58886b45b, c5f5877c043): a 64-entry table of `cbrt(x << 18) - 1` plus one
//!   Newton step with a 64-bit divide, then `* 341 >> 10` (divide by 3); average error ~0.195%.

/// Result of a cube root: the value and whether the kernel's arithmetic would have overflowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CubeRoot {
    /// The root.
    pub value: u32,
    /// True when the 2.6.20 kernel's 32-bit `x * x` wrapped (or was 0) on the way.
    pub overflowed: bool,
}

/// `cbrt(x << 18) - 1` for x in 0..64, refined by hand (Willy Tarreau), from 2.6.22's
/// `tcp_cubic.c` (unchanged since).
pub const CBRT_TABLE: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, //
    123, 129, 134, 138, 143, 147, 151, 156, //
    157, 161, 164, 168, 170, 173, 176, 179, //
    181, 185, 187, 190, 192, 194, 197, 199, //
    200, 202, 204, 206, 209, 211, 213, 215, //
    217, 219, 221, 222, 224, 225, 227, 229, //
    231, 232, 234, 236, 237, 239, 240, 242, //
    244, 245, 246, 248, 250, 251, 252, 254, //
];

/// `fls64(a)`: 1-based index of the highest set bit, 0 for 0.
pub fn fls64(a: u64) -> u32 {
    64 - a.leading_zeros()
}

/// Upper bound on 2.6.20's Newton iterations: it converges in well under 20 steps for any
/// u64; the bound only guards against a cycle.
const NEWTON_MAX_STEPS: u32 = 64;

/// 2.6.20's Newton-Raphson cube root (64-bit `x * x`; see the module docs).
pub fn cube_root_newton(a: u64) -> CubeRoot {
    let mut overflowed = false;
    let mut x: u32 = 1u32 << (fls64(a) / 3);
    for _ in 0..NEWTON_MAX_STEPS {
        let x1 = x;
        let sq = u64::from(x) * u64::from(x);
        if sq > u64::from(u32::MAX) {
            overflowed = true;
        }
        if sq == 0 {
            // x == 0: the kernel only gets here after converging; nothing left to divide.
            break;
        }
        // (uint32_t) div64_64(a, x*x): the quotient is truncated to 32 bits.
        let q = (a / sq) as u32;
        x = x.wrapping_mul(2).wrapping_add(q) / 3;
        // abs(x1 - x) on an int.
        let diff = (x1.wrapping_sub(x) as i32).unsigned_abs();
        if diff <= 1 {
            return CubeRoot {
                value: x,
                overflowed,
            };
        }
    }
    CubeRoot {
        value: x,
        overflowed: true,
    }
}

/// 2.6.22+'s table-plus-one-Newton-step cube root.
pub fn cube_root_table(a: u64) -> u32 {
    let b = fls64(a);
    if b < 7 {
        // a in [0..63]
        return (u32::from(CBRT_TABLE[a as usize]) + 35) >> 6;
    }
    let b = ((b * 84) >> 8) - 1;
    let shift = (a >> (b * 3)) as usize;
    let v = u32::from(CBRT_TABLE[shift.min(63)]);
    let mut x = ((v + 10) << b) >> 6;
    // (u32)div64_u64(a, (u64)x * (u64)(x - 1)); x >= 4 here, the check is only a guard.
    if let Some(q) = a.checked_div(u64::from(x) * u64::from(x.wrapping_sub(1))) {
        x = x.wrapping_mul(2).wrapping_add(q as u32);
    }
    x.wrapping_mul(341) >> 10
}
