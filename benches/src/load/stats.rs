//! Latency samples and their summary: throughput, nearest-rank percentiles, mean and maximum.

use std::time::Duration;

use serde::Serialize;

/// The `p`-th percentile (0 < p ≤ 100) of ascending `sorted` samples by the nearest-rank method:
/// the smallest sample such that at least `p` percent of the samples are less than or equal to it.
/// `None` for no samples; `p` outside (0, 100] is clamped into it.
pub fn percentile(sorted: &[Duration], p: f64) -> Option<Duration> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let p = if p.is_nan() { 100.0 } else { p.clamp(0.0, 100.0) };
    // Ranks are 1-based; rank 0 (p = 0) means the minimum.
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    let index = rank.clamp(1, n) - 1;
    sorted.get(index).copied()
}

/// The outcome of one measured operation kind (a phase).
#[derive(Debug, Clone, Default)]
pub struct Phase {
    /// The operation, as printed in the table (`create`, `get`, …).
    pub operation: String,
    /// How many requests (or watch deliveries) ran concurrently.
    pub concurrency: usize,
    /// The latency of every successful operation.
    pub samples: Vec<Duration>,
    /// How many operations failed.
    pub errors: usize,
    /// The first failure, to explain the error count.
    pub first_error: Option<String>,
    /// Wall-clock time of the phase, first request to last answer.
    pub elapsed: Duration,
    /// A remark printed under the table.
    pub note: Option<String>,
}

impl Phase {
    /// An empty phase of `operation` at `concurrency`.
    pub fn new(operation: impl Into<String>, concurrency: usize) -> Self {
        Self {
            operation: operation.into(),
            concurrency,
            ..Self::default()
        }
    }

    /// Records a failure (keeps the first message).
    pub fn record_error(&mut self, message: impl Into<String>) {
        self.errors += 1;
        if self.first_error.is_none() {
            self.first_error = Some(message.into());
        }
    }

    /// Adds the samples, errors and first error of `other` (a worker's share) to this phase.
    pub fn absorb(&mut self, other: Phase) {
        self.samples.extend(other.samples);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }

    /// The summary of the samples over the elapsed time.
    pub fn summary(&self) -> Summary {
        Summary::of(
            &self.operation,
            self.concurrency,
            &self.samples,
            self.errors,
            self.elapsed,
        )
    }
}

/// Throughput and latency of one phase, as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// The operation.
    pub operation: String,
    /// Successful operations.
    pub count: usize,
    /// Failed operations.
    pub errors: usize,
    /// Concurrency.
    pub concurrency: usize,
    /// Wall-clock seconds.
    pub elapsed_seconds: f64,
    /// Successful operations per second of wall-clock time.
    pub ops_per_second: f64,
    /// Median latency in milliseconds.
    pub p50_ms: Option<f64>,
    /// 99th-percentile latency in milliseconds.
    pub p99_ms: Option<f64>,
    /// Largest latency in milliseconds.
    pub max_ms: Option<f64>,
    /// Mean latency in milliseconds.
    pub mean_ms: Option<f64>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Summary {
    /// Summarises `samples` (any order) taken over `elapsed`.
    pub fn of(
        operation: &str,
        concurrency: usize,
        samples: &[Duration],
        errors: usize,
        elapsed: Duration,
    ) -> Self {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        let secs = elapsed.as_secs_f64();
        let ops_per_second = if secs > 0.0 {
            sorted.len() as f64 / secs
        } else {
            0.0
        };
        let mean_ms = if sorted.is_empty() {
            None
        } else {
            let total: f64 = sorted.iter().map(|d| d.as_secs_f64()).sum();
            Some(total / sorted.len() as f64 * 1000.0)
        };
        Self {
            operation: operation.to_string(),
            count: sorted.len(),
            errors,
            concurrency,
            elapsed_seconds: secs,
            ops_per_second,
            p50_ms: percentile(&sorted, 50.0).map(ms),
            p99_ms: percentile(&sorted, 99.0).map(ms),
            max_ms: sorted.last().copied().map(ms),
            mean_ms,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn millis(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn percentile_of_nothing_is_none() {
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn percentile_uses_nearest_rank() {
        let s = millis(&[15, 20, 35, 40, 50]);
        assert_eq!(percentile(&s, 5.0), Some(Duration::from_millis(15)));
        assert_eq!(percentile(&s, 30.0), Some(Duration::from_millis(20)));
        assert_eq!(percentile(&s, 40.0), Some(Duration::from_millis(20)));
        assert_eq!(percentile(&s, 50.0), Some(Duration::from_millis(35)));
        assert_eq!(percentile(&s, 100.0), Some(Duration::from_millis(50)));
    }

    #[test]
    fn p99_of_a_hundred_is_the_99th_and_of_a_thousand_the_990th() {
        let hundred: Vec<u64> = (1..=100).collect();
        assert_eq!(
            percentile(&millis(&hundred), 99.0),
            Some(Duration::from_millis(99))
        );
        assert_eq!(
            percentile(&millis(&hundred), 50.0),
            Some(Duration::from_millis(50))
        );
        let thousand: Vec<u64> = (1..=1000).collect();
        assert_eq!(
            percentile(&millis(&thousand), 99.0),
            Some(Duration::from_millis(990))
        );
    }

    #[test]
    fn percentile_clamps_its_argument() {
        let s = millis(&[1, 2, 3]);
        assert_eq!(percentile(&s, 0.0), Some(Duration::from_millis(1)));
        assert_eq!(percentile(&s, -5.0), Some(Duration::from_millis(1)));
        assert_eq!(percentile(&s, 250.0), Some(Duration::from_millis(3)));
        assert_eq!(percentile(&s, f64::NAN), Some(Duration::from_millis(3)));
    }

    #[test]
    fn single_sample_is_every_percentile() {
        let s = millis(&[7]);
        for p in [1.0, 50.0, 99.0, 100.0] {
            assert_eq!(percentile(&s, p), Some(Duration::from_millis(7)));
        }
    }

    #[test]
    fn summary_sorts_and_computes_throughput() {
        let samples = millis(&[40, 10, 30, 20]);
        let s = Summary::of("get", 2, &samples, 1, Duration::from_secs(2));
        assert_eq!(s.count, 4);
        assert_eq!(s.errors, 1);
        assert_eq!(s.ops_per_second, 2.0);
        assert_eq!(s.p50_ms, Some(20.0));
        assert_eq!(s.p99_ms, Some(40.0));
        assert_eq!(s.max_ms, Some(40.0));
        assert_eq!(s.mean_ms, Some(25.0));
    }

    #[test]
    fn summary_of_an_empty_phase_has_no_latencies() {
        let s = Summary::of("list", 1, &[], 3, Duration::ZERO);
        assert_eq!(s.count, 0);
        assert_eq!(s.ops_per_second, 0.0);
        assert_eq!(s.p50_ms, None);
        assert_eq!(s.mean_ms, None);
    }

    #[test]
    fn absorb_merges_worker_shares() {
        let mut phase = Phase::new("create", 2);
        let mut a = Phase::new("create", 1);
        a.samples = millis(&[1, 2]);
        let mut b = Phase::new("create", 1);
        b.samples = millis(&[3]);
        b.record_error("first");
        b.record_error("second");
        phase.absorb(a);
        phase.absorb(b);
        assert_eq!(phase.samples.len(), 3);
        assert_eq!(phase.errors, 2);
        assert_eq!(phase.first_error.as_deref(), Some("first"));
    }
}
