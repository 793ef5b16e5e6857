//! Deterministic measurement noise: a tiny PRNG (SplitMix64), Gaussian jitter and spikes.

use super::config::NoiseConfig;

/// SplitMix64: small, fast, and good enough for simulated measurement noise.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    pub(crate) fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub(crate) fn next_gaussian(&mut self) -> f64 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]: keeps ln finite
        let u2 = self.next_f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Applies the configured noise to one measurement.
#[derive(Debug, Clone)]
pub(crate) struct Noise {
    config: NoiseConfig,
    rng: SplitMix64,
}

impl Noise {
    pub(crate) fn new(config: NoiseConfig) -> Noise {
        Noise {
            config,
            rng: SplitMix64::new(config.seed),
        }
    }

    /// `value` with relative Gaussian jitter and, at `outlier_rate`, a 3-10x spike.
    pub(crate) fn apply(&mut self, value: f64) -> f64 {
        let mut noisy = value;
        if self.config.jitter > 0.0 {
            // Clamped so that a large jitter never yields a non-positive measurement.
            noisy *= (1.0 + self.config.jitter * self.rng.next_gaussian()).max(0.1);
        }
        if self.config.outlier_rate > 0.0 && self.rng.next_f64() < self.config.outlier_rate {
            noisy *= 3.0 + 7.0 * self.rng.next_f64();
        }
        noisy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaussian_has_unit_spread() {
        let mut rng = SplitMix64::new(1);
        let xs: Vec<f64> = (0..20000).map(|_| rng.next_gaussian()).collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!(
            mean.abs() < 0.03 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }

    #[test]
    fn same_seed_same_noise() {
        let config = NoiseConfig {
            jitter: 0.02,
            outlier_rate: 0.1,
            seed: 3,
        };
        let (mut a, mut b) = (Noise::new(config), Noise::new(config));
        for _ in 0..100 {
            assert_eq!(a.apply(300.0), b.apply(300.0));
        }
    }
}
