//! Prometheus metrics of the controllers: how often each reconciled, and how it ended.
//!
//! One [`ControllerMetrics`] is shared by every controller of a process (it is cheap to clone);
//! the binaries register it in their `prometheus_client` registry and serve it on `/metrics`.
//!
//! ```
//! let mut registry = prometheus_client::registry::Registry::default();
//! let metrics = ocm_core::metrics::ControllerMetrics::default();
//! metrics.register(&mut registry);
//! metrics.reconciled("managedcluster", true);
//! let mut text = String::new();
//! prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
//! assert!(text.contains(r#"ocm_controller_reconcile_total{controller="managedcluster",result="success"} 1"#));
//! ```

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// The labels of a reconciliation.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    controller: String,
    result: &'static str,
}

/// Reconciliation counters by controller and result.
#[derive(Debug, Clone, Default)]
pub struct ControllerMetrics {
    reconciles: Family<ReconcileLabels, Counter>,
}

impl ControllerMetrics {
    /// Registers the counters as `ocm_controller_reconcile_total`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "ocm_controller_reconcile",
            "Reconciliations by controller and result (success or error)",
            self.reconciles.clone(),
        );
    }

    /// Counts one reconciliation of `controller`.
    pub fn reconciled(&self, controller: &str, success: bool) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                controller: controller.to_string(),
                result: if success { "success" } else { "error" },
            })
            .inc();
    }
}
