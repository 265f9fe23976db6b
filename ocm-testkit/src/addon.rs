//! Add-on agents in a fleet: the hub credentials the registration agent obtains for an add-on,
//! as files an agent reads (what the add-on's pod gets by mounting the secret).

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use ocm_api::addon::v1beta1::ManagedClusterAddOn;
use ocm_api::names::secrets;
use ocm_core::registration::agent::addon::install_namespace;

use crate::{Fleet, FleetError, poll};

impl Fleet {
    /// Waits until the registration agent of `cluster` has written the hub kubeconfig secret of
    /// add-on `addon` (`<addon>-hub-kubeconfig` in the add-on's install namespace on the managed
    /// cluster, its `cluster-name` this cluster's), writes its keys (`kubeconfig`, `tls.crt`,
    /// `tls.key`, `cluster-name`) as files into a directory of the fleet and returns it: pass
    /// `<dir>/kubeconfig` to the add-on's agent as its hub kubeconfig. Call it again after a rotation for the new credentials.
    ///
    /// # Errors
    /// [`FleetError::UnknownCluster`], [`FleetError::Timeout`] when the secret does not appear
    /// in time, [`FleetError::WriteFile`].
    pub async fn addon_hub_kubeconfig_dir(
        &self,
        cluster: &str,
        addon: &str,
        timeout: Duration,
    ) -> Result<PathBuf, FleetError> {
        let managed = self
            .cluster(cluster)
            .ok_or_else(|| FleetError::UnknownCluster(cluster.to_string()))?;
        let addons: Api<ManagedClusterAddOn> = Api::namespaced(self.hub_client(), cluster);
        let name = secrets::addon_hub_kubeconfig(addon);
        let client = managed.client();
        let secret = poll(
            &format!("secret {name} of add-on {addon} on cluster {cluster}"),
            timeout,
            || async {
                let mca = addons.get_opt(addon).await.ok().flatten()?;
                let namespace = install_namespace(&mca);
                let secret = Api::<Secret>::namespaced(client.clone(), &namespace)
                    .get_opt(&name)
                    .await
                    .ok()
                    .flatten()?;
                // Written for this cluster: a secret another run left behind is not the one.
                let data = secret.data.as_ref()?;
                let for_cluster = data
                    .get(secrets::keys::CLUSTER_NAME)
                    .is_some_and(|name| name.0.as_slice() == cluster.as_bytes());
                let complete = data.contains_key(secrets::keys::KUBECONFIG)
                    && data.contains_key(secrets::keys::TLS_CERT);
                (for_cluster && complete).then_some(secret)
            },
        )
        .await?;
        let dir = self.dir().join(cluster).join("addons").join(addon);
        std::fs::create_dir_all(&dir).map_err(|source| FleetError::WriteFile {
            path: dir.clone(),
            source,
        })?;
        for (key, value) in secret.data.unwrap_or_default() {
            let path = dir.join(&key);
            std::fs::write(&path, &value.0).map_err(|source| FleetError::WriteFile { path, source })?;
        }
        Ok(dir)
    }
}
