//! Restart resilience: the agent, the hub controllers or both are killed and started again at
//! each step of the join, and the join still completes — with no more CSRs than upstream's cap,
//! no CSR more than needed, and the hub-kubeconfig secret kept once written.

use std::time::Duration;

use super::support::{CSR_CAP, Join};

/// What is killed and restarted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kill {
    Agent,
    Hub,
    Both,
}

impl Kill {
    fn agent(self) -> bool {
        matches!(self, Kill::Agent | Kill::Both)
    }
    fn hub(self) -> bool {
        matches!(self, Kill::Hub | Kill::Both)
    }
}

/// The step of the join at which the kill happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    BeforeClusterExists,
    CsrPending,
    CsrApprovedBeforeSecret,
    SecretBeforeAccept,
    AcceptedBeforeJoined,
    AfterJoined,
}

/// Kills what `kill` names, then starts it again.
async fn restart(join: &mut Join, kill: Kill) {
    if kill.agent() {
        join.kill_agent().await;
    }
    if kill.hub() {
        join.kill_hub().await;
        join.start_hub();
    }
    if kill.agent() {
        join.start_agent();
    }
}

/// Approves the cluster's pending CSRs until the hub-kubeconfig secret is filled (an agent that
/// was restarted with a CSR pending makes a new one, which may appear after a first approval).
async fn approve_until_secret(join: &Join) -> Vec<u8> {
    super::support::eventually(30, "the secret after approving", || async {
        join.approve_pending().await;
        let data = join.secret().await?.data?;
        data.get("kubeconfig")?;
        data.get("tls.crt").map(|c| c.0.clone())
    })
    .await
}

async fn join_killing_at(step: Step, kill: Kill) {
    let mut join = Join::new("restart").await;
    join.start_hub();
    let mut first = join.agent_options();
    if step == Step::CsrApprovedBeforeSecret {
        // The first agent looks at its CSR only every 5 s: the test approves it and kills the
        // agent in between, so the certificate is issued but never written.
        first.poll_period = Duration::from_secs(5);
    }
    join.start_agent_with(first);

    if step == Step::BeforeClusterExists {
        tokio::task::yield_now().await;
        restart(&mut join, kill).await;
        if kill.agent() {
            assert!(
                join.cluster().await.is_none(),
                "the agent was to be killed before it created the ManagedCluster"
            );
        }
    }

    join.wait_pending_csr().await;
    assert!(join.cluster().await.is_some(), "CSR without a ManagedCluster");
    if step == Step::CsrPending {
        restart(&mut join, kill).await;
    }

    if step == Step::CsrApprovedBeforeSecret {
        assert_eq!(join.approve_pending().await, 1);
        restart(&mut join, kill).await;
        if kill.agent() {
            assert!(
                join.secret().await.is_none(),
                "the agent was to be killed before writing the secret"
            );
        }
    }
    // From SecretBeforeAccept on, the CSR is approved (and the secret written) before the accept.
    let mut certificate = None;
    if step >= Step::SecretBeforeAccept {
        certificate = Some(approve_until_secret(&join).await);
    }
    if step == Step::SecretBeforeAccept {
        restart(&mut join, kill).await;
    }

    if step == Step::AcceptedBeforeJoined {
        // Killed after hubAcceptsClient is set and before the agent could report Joined: the
        // agent is stopped before the accept, the hub controllers right after it.
        if kill.agent() {
            join.kill_agent().await;
        }
        join.accept(1).await;
        if kill.hub() {
            join.kill_hub().await;
            join.start_hub();
        }
        if kill.agent() {
            assert_ne!(
                join.condition("ManagedClusterJoined").await.as_deref(),
                Some("True"),
                "Joined without a running agent"
            );
            join.start_agent();
        }
    } else {
        join.accept(1).await;
    }
    if certificate.is_none() {
        approve_until_secret(&join).await;
    }
    let mut joined = join.wait_joined().await;

    if step == Step::AfterJoined {
        restart(&mut join, kill).await;
        if kill.agent() {
            // The restarted agent renews the lease (on the credentials kept in the secret).
            wait_lease_renewed(&join).await;
        }
        joined = join.wait_joined().await;
    }

    // The join completed; the CSRs stayed within the cap, and only restarted agents with a CSR
    // in flight made another one.
    let csrs = join.csrs().await.len();
    assert!(csrs <= CSR_CAP, "{csrs} CSRs, more than the cap {CSR_CAP}");
    let agent_lost_a_csr =
        kill.agent() && step <= Step::CsrApprovedBeforeSecret && step > Step::BeforeClusterExists;
    if agent_lost_a_csr {
        assert!(csrs >= 2, "a restarted agent makes a new CSR ({csrs})");
    } else {
        assert_eq!(csrs, 1, "no restart at {step:?} needs a second CSR");
    }
    // Once written, the secret is kept: the credentials are the ones issued before the restart.
    if step >= Step::SecretBeforeAccept {
        assert_eq!(
            certificate.as_deref(),
            Some(joined.as_slice()),
            "the hub-kubeconfig secret changed across the restart"
        );
    }
    assert!(join.agent_running(), "the agent stopped");
    join.finish().await;
}

/// Waits until the agent renews the cluster lease twice (so it runs on hub credentials).
async fn wait_lease_renewed(join: &Join) {
    use k8s_openapi::api::coordination::v1::Lease;
    let leases: kube::Api<Lease> = kube::Api::namespaced(join.hub_client.clone(), &join.cluster);
    let renew_time = || async {
        leases
            .get_opt("managed-cluster-lease")
            .await
            .unwrap()
            .and_then(|l| l.spec)
            .and_then(|s| s.renew_time)
            .map(|t| t.0)
    };
    let first = super::support::eventually(30, "a lease renewal", || async { renew_time().await }).await;
    super::support::eventually(30, "another lease renewal", || async {
        renew_time().await.filter(|t| *t != first).map(|_| ())
    })
    .await;
}

macro_rules! restart_matrix {
    ($($name:ident: $step:ident, $kill:ident;)*) => {$(
        #[tokio::test]
        async fn $name() {
            join_killing_at(Step::$step, Kill::$kill).await;
        }
    )*};
}

restart_matrix! {
    restart_agent_before_cluster_exists: BeforeClusterExists, Agent;
    restart_hub_before_cluster_exists: BeforeClusterExists, Hub;
    restart_both_before_cluster_exists: BeforeClusterExists, Both;
    restart_agent_with_csr_pending: CsrPending, Agent;
    restart_hub_with_csr_pending: CsrPending, Hub;
    restart_both_with_csr_pending: CsrPending, Both;
    restart_agent_after_approval_before_secret: CsrApprovedBeforeSecret, Agent;
    restart_hub_after_approval_before_secret: CsrApprovedBeforeSecret, Hub;
    restart_both_after_approval_before_secret: CsrApprovedBeforeSecret, Both;
    restart_agent_after_secret_before_accept: SecretBeforeAccept, Agent;
    restart_hub_after_secret_before_accept: SecretBeforeAccept, Hub;
    restart_both_after_secret_before_accept: SecretBeforeAccept, Both;
    restart_agent_after_accept_before_joined: AcceptedBeforeJoined, Agent;
    restart_hub_after_accept_before_joined: AcceptedBeforeJoined, Hub;
    restart_both_after_accept_before_joined: AcceptedBeforeJoined, Both;
    restart_agent_after_joined: AfterJoined, Agent;
    restart_hub_after_joined: AfterJoined, Hub;
    restart_both_after_joined: AfterJoined, Both;
}
