//! The managed side: one in-process embedded control plane shared by every agent. An agent
//! needs of its spoke only a namespace for its hub-kubeconfig secret, `/livez`, `/version`, the
//! Nodes and (when their CRDs exist) ClusterClaims, so one spoke with a namespace per agent is
//! enough; each agent still runs its full bootstrap, lease, status, rotation and add-on loops.

use futures::{StreamExt, TryStreamExt};
use kube::Client;

use super::JoinError;
use crate::load::target::{Target, create_namespace};

/// The spoke namespace of agent `index`.
pub fn agent_namespace(index: usize) -> String {
    format!("join-agent-{index}")
}

/// The cluster name of agent `index`.
pub fn cluster_name(index: usize) -> String {
    format!("join-cluster-{index}")
}

/// The shared spoke.
pub struct Spoke {
    /// Keeps the server running.
    pub target: Target,
    /// An admin client, shared by the agents.
    pub client: Client,
}

impl Spoke {
    /// Starts the spoke on `server_runtime` and creates the namespaces of `agents` agents.
    pub async fn start(server_runtime: &tokio::runtime::Handle, agents: usize) -> Result<Self, JoinError> {
        let target = Target::embedded(server_runtime, None).await?;
        let client = target
            .clients(1)?
            .into_iter()
            .next()
            .ok_or_else(|| JoinError::PrepareHub("no spoke client".into()))?;
        futures::stream::iter(0..agents)
            .map(|i| {
                let client = client.clone();
                async move { create_namespace(&client, &agent_namespace(i)).await }
            })
            .buffer_unordered(16)
            .try_collect::<Vec<()>>()
            .await?;
        Ok(Self { target, client })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_per_agent() {
        assert_eq!(agent_namespace(7), "join-agent-7");
        assert_eq!(cluster_name(7), "join-cluster-7");
        assert_ne!(cluster_name(1), cluster_name(10));
    }
}
