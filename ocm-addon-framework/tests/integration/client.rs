//! `ocm_addon_framework::client::client_for` against the hub: HTTP/2 where the server offers it
//! (kube-apiserver and ocm-controlplane both do), requests and watches multiplexed.

use kube::api::{Api, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use ocm_addon_framework::client::client_for;
use ocm_controlplane::TestEnv;

#[allow(clippy::expect_used, reason = "a test helper")]
async fn hub_config(env: &TestEnv) -> kube::Config {
    let kubeconfig = Kubeconfig::read_from(env.kubeconfig_path()).expect("the hub's kubeconfig");
    kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("a configuration from the hub's kubeconfig")
}

#[tokio::test]
async fn the_client_speaks_http2_to_the_hub() {
    let env = TestEnv::hub().await.unwrap();
    let client = client_for(hub_config(&env).await).unwrap();
    let request = http::Request::get("/version")
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), http::Version::HTTP_2);
}

#[tokio::test]
async fn requests_go_out_while_a_watch_is_open() {
    let env = TestEnv::hub().await.unwrap();
    let client = client_for(hub_config(&env).await).unwrap();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    // A watch held open while other requests go out, as a controller's informer does.
    let mut watch = Box::pin(
        namespaces
            .watch(&kube::api::WatchParams::default().timeout(5), "0")
            .await
            .unwrap(),
    );
    let first = futures::StreamExt::next(&mut watch).await;
    assert!(first.is_some(), "the watch delivers the existing namespaces");
    for _ in 0..20 {
        namespaces.list(&ListParams::default().limit(1)).await.unwrap();
    }
    let request = http::Request::get("/version")
        .body(kube::client::Body::empty())
        .unwrap();
    assert_eq!(
        client.send(request).await.unwrap().version(),
        http::Version::HTTP_2
    );
}
