//! The `kube-system/kube-controller-manager` Lease, held and renewed by the in-process controllers
//! as kube-controller-manager's leader election does (renewed every 2 s, 15 s duration).
//!
//! Besides telling clients that the controllers run, the renewals keep the store's revision
//! moving the way a real cluster's background writers do, so resourceVersions a client sees are
//! not all of its own making.

use std::time::Duration;

use serde_json::{Value, json};

use super::controller_context;
use crate::rest::{Api, RequestContext};
use crate::storage;

/// The Lease's name (and namespace: `kube-system`).
pub const NAME: &str = "kube-controller-manager";
const NAMESPACE: &str = "kube-system";
/// How often the Lease is renewed.
pub const RENEW_INTERVAL: Duration = Duration::from_secs(2);

/// The current time as a `MicroTime` (microsecond precision).
fn micro_time() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The Lease body of a fresh acquisition by `holder`.
fn acquired(holder: &str, now: &str) -> Value {
    json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": now,
            "renewTime": now, "leaseTransitions": 0}})
}

/// Acquires the Lease (or takes it over) and renews it until the task is aborted.
pub async fn run(api: Api) {
    let Some(info) = api.registry.get("coordination.k8s.io", "v1", "leases") else {
        return;
    };
    let holder = format!("ocm-controlplane_{}", uuid::Uuid::new_v4());
    let key = storage::object_key("coordination.k8s.io", "leases", Some(NAMESPACE), NAME);
    let mut ticker = tokio::time::interval(RENEW_INTERVAL);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let ctx = RequestContext {
            name: Some(NAME.into()),
            ..controller_context("kube-controller-manager", Some(NAMESPACE))
        };
        let now = micro_time();
        let result = match api.storage.get(&key).await {
            Ok(None) => api
                .create(&info, &ctx, acquired(&holder, &now).to_string().as_bytes())
                .await
                .map(|_| ()),
            Ok(Some(current)) => {
                let mut lease = (*current.object).clone();
                let spec = crate::rest::ensure_object(
                    crate::rest::ensure_object(&mut lease)
                        .entry("spec")
                        .or_insert(Value::Null),
                );
                if spec.get("holderIdentity").and_then(Value::as_str) != Some(holder.as_str()) {
                    let transitions = spec.get("leaseTransitions").and_then(Value::as_i64).unwrap_or(0);
                    spec.insert("holderIdentity".into(), json!(holder));
                    spec.insert("acquireTime".into(), json!(now));
                    spec.insert("leaseTransitions".into(), json!(transitions + 1));
                }
                spec.insert("renewTime".into(), json!(now));
                api.update(&info, &ctx, lease.to_string().as_bytes())
                    .await
                    .map(|_| ())
            }
            Err(error) => Err(crate::status::ApiError::internal(error)),
        };
        if let Err(error) = result
            && error.code != 409
        {
            tracing::debug!(%error, "could not renew the {NAME} lease");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn micro_time_has_microseconds() {
        let t = micro_time();
        assert_eq!(t.len(), "2026-01-01T00:00:00.000000Z".len(), "{t}");
        assert!(acquired("h", &t)["spec"]["renewTime"] == json!(t));
    }
}
