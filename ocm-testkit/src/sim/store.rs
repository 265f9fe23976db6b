//! The clients through which the simulated clusters reach their shared store.
//!
//! One kube-rs client of kube's own (HTTP/1.1) holds a TCP connection per request or watch in
//! flight and keeps every one its pool opened; thousands of simulated clusters sharing it held
//! thousands of connections to the in-process store, both ends in the simulator's process, and a
//! 5 000-cluster run ran out of file descriptors (docs/performance.md). [`StoreClients::connect`]
//! instead gives the fleet HTTP/2 clients ([`ocm_addon_framework::client::client_for`]), one per
//! [`CLUSTERS_PER_CONNECTION`] clusters: each multiplexes its clusters' requests and watches over
//! one connection, well under the 1 000 concurrent streams kube-apiserver (and `ocm-controlplane`)
//! allow a connection, as client-go's transport shares one connection among a process's clients.

use ocm_controlplane::TestEnv;

use super::SimError;

/// How many simulated clusters share one connection to the store (each holds a watch or two
/// there, and requests in flight).
pub const CLUSTERS_PER_CONNECTION: usize = 64;

/// The clients of the shared store: cluster `n` uses client `n % len`.
#[derive(Clone)]
pub struct StoreClients {
    clients: Vec<kube::Client>,
}

impl std::fmt::Debug for StoreClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreClients")
            .field("clients", &self.clients.len())
            .finish()
    }
}

impl From<kube::Client> for StoreClients {
    /// Every cluster on this one client.
    fn from(client: kube::Client) -> Self {
        Self {
            clients: vec![client],
        }
    }
}

impl StoreClients {
    /// These clients, cluster `n` on client `n % len`.
    ///
    /// # Errors
    /// [`SimError::StoreClient`] when `clients` is empty.
    pub fn new(clients: Vec<kube::Client>) -> Result<Self, SimError> {
        if clients.is_empty() {
            return Err(SimError::StoreClient("no clients given".into()));
        }
        Ok(Self { clients })
    }

    /// HTTP/2 clients of the store `config` names, enough for `clusters` clusters at
    /// [`CLUSTERS_PER_CONNECTION`] a connection.
    ///
    /// # Errors
    /// [`SimError::StoreClient`] when the configuration's TLS material or credentials are unusable.
    pub fn connect(config: &kube::Config, clusters: usize) -> Result<Self, SimError> {
        let clients = (0..connections_for(clusters))
            .map(|_| {
                ocm_addon_framework::client::client_for(config.clone())
                    .map_err(|e| SimError::StoreClient(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { clients })
    }

    /// [`StoreClients::connect`] with the admin credentials of `env`.
    ///
    /// # Errors
    /// [`SimError::StoreClient`] when the environment's kubeconfig cannot be read or used.
    pub async fn of_env(env: &TestEnv, clusters: usize) -> Result<Self, SimError> {
        let config = env
            .config()
            .await
            .map_err(|e| SimError::StoreClient(e.to_string()))?;
        Self::connect(&config, clusters)
    }

    /// The client of cluster `index`.
    #[must_use]
    pub fn for_cluster(&self, index: usize) -> &kube::Client {
        // Never empty: both constructors make at least one client.
        &self.clients[index % self.clients.len()]
    }

    /// How many clients (connections) there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.clients.len()
    }

    /// Never true: there is always at least one client.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }
}

/// How many connections `clusters` clusters take (at least one).
fn connections_for(clusters: usize) -> usize {
    clusters.div_ceil(CLUSTERS_PER_CONNECTION).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clusters_are_spread_at_most_a_connection_s_share_each() {
        assert_eq!(connections_for(0), 1);
        assert_eq!(connections_for(1), 1);
        assert_eq!(connections_for(CLUSTERS_PER_CONNECTION), 1);
        assert_eq!(connections_for(CLUSTERS_PER_CONNECTION + 1), 2);
        assert_eq!(connections_for(5000), 79);
    }

    #[tokio::test]
    async fn a_fleet_gets_one_client_per_connection_s_share() {
        let mut config = kube::Config::new("https://127.0.0.1:9".parse().unwrap());
        config.accept_invalid_certs = true;
        let store = StoreClients::connect(&config, 3 * CLUSTERS_PER_CONNECTION).unwrap();
        assert_eq!(store.len(), 3);
        assert!(!store.is_empty());
        let single = StoreClients::from(store.for_cluster(4).clone());
        assert_eq!(single.len(), 1);
        assert!(StoreClients::new(Vec::new()).is_err());
        let given = StoreClients::new(vec![single.for_cluster(0).clone(); 2]).unwrap();
        assert_eq!(given.len(), 2);
    }
}
