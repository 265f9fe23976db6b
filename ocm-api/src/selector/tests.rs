//! Matching API label selectors and Placement claim selectors.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: if values.is_empty() {
            None
        } else {
            Some(values.iter().map(|v| (*v).to_owned()).collect())
        },
    }
}

fn claim(name: &str, value: &str) -> ManagedClusterClaim {
    ManagedClusterClaim {
        name: Some(name.to_owned()),
        value: Some(value.to_owned()),
    }
}

#[test]
fn empty_selector_matches_everything() {
    assert!(matches(&LabelSelector::default(), &labels(&[])).unwrap());
    assert!(matches(&LabelSelector::default(), &labels(&[("a", "b")])).unwrap());
    assert!(Selector::everything().is_empty());
}

#[test]
fn match_labels_need_equal_values() {
    let selector = LabelSelector {
        match_labels: Some(labels(&[("env", "prod"), ("tier", "web")])),
        ..Default::default()
    };
    assert!(
        matches(
            &selector,
            &labels(&[("env", "prod"), ("tier", "web"), ("x", "y")])
        )
        .unwrap()
    );
    assert!(!matches(&selector, &labels(&[("env", "prod")])).unwrap());
    assert!(!matches(&selector, &labels(&[("env", "dev"), ("tier", "web")])).unwrap());
}

/// A requirement, the labels it is checked against, and whether they match.
type Case = (
    LabelSelectorRequirement,
    &'static [(&'static str, &'static str)],
    bool,
);

#[test]
fn expressions_follow_kubernetes_semantics() {
    let cases: &[Case] = &[
        (expr("env", "In", &["prod", "staging"]), &[("env", "prod")], true),
        (expr("env", "In", &["prod", "staging"]), &[("env", "dev")], false),
        (expr("env", "In", &["prod"]), &[], false),
        (expr("env", "NotIn", &["prod"]), &[("env", "dev")], true),
        (expr("env", "NotIn", &["prod"]), &[("env", "prod")], false),
        (expr("env", "NotIn", &["prod"]), &[], true),
        (expr("env", "Exists", &[]), &[("env", "")], true),
        (expr("env", "Exists", &[]), &[], false),
        (expr("env", "DoesNotExist", &[]), &[], true),
        (expr("env", "DoesNotExist", &[]), &[("env", "x")], false),
    ];
    for (requirement, given, want) in cases {
        let selector = LabelSelector {
            match_expressions: Some(vec![requirement.clone()]),
            ..Default::default()
        };
        assert_eq!(
            matches(&selector, &labels(given)).unwrap(),
            *want,
            "{requirement:?} on {given:?}"
        );
    }
}

#[test]
fn labels_and_expressions_are_anded() {
    let selector = LabelSelector {
        match_labels: Some(labels(&[("vendor", "OpenShift")])),
        match_expressions: Some(vec![expr("region", "NotIn", &["us-east-1"])]),
    };
    assert!(
        matches(
            &selector,
            &labels(&[("vendor", "OpenShift"), ("region", "eu-west-1")])
        )
        .unwrap()
    );
    assert!(
        !matches(
            &selector,
            &labels(&[("vendor", "OpenShift"), ("region", "us-east-1")])
        )
        .unwrap()
    );
    assert!(!matches(&selector, &labels(&[("region", "eu-west-1")])).unwrap());
}

#[test]
fn invalid_selectors_are_rejected() {
    let with = |e| LabelSelector {
        match_expressions: Some(vec![e]),
        ..Default::default()
    };
    assert!(matches!(
        matches(&with(expr("a", "in", &["x"])), &labels(&[])),
        Err(Error::ParseOperator { operator, .. }) if operator == "in"
    ));
    assert!(matches!(
        matches(&with(expr("a", "Equals", &["x"])), &labels(&[])),
        Err(Error::ParseOperator { .. })
    ));
    assert!(matches!(
        matches(&with(expr("a", "In", &[])), &labels(&[])),
        Err(Error::CheckValues {
            operator: Operator::In,
            ..
        })
    ));
    assert!(matches!(
        matches(&with(expr("a", "Exists", &["x"])), &labels(&[])),
        Err(Error::CheckValues {
            operator: Operator::Exists,
            ..
        })
    ));
    assert!(matches!(
        matches(&with(expr("bad key", "Exists", &[])), &labels(&[])),
        Err(Error::ValidateKey { .. })
    ));
    assert!(matches!(
        matches(&with(expr("a", "In", &["not valid"])), &labels(&[])),
        Err(Error::ValidateValue { .. })
    ));
    let bad_label = LabelSelector {
        match_labels: Some(labels(&[("a", "-x")])),
        ..Default::default()
    };
    assert!(matches!(
        matches(&bad_label, &labels(&[])),
        Err(Error::ValidateValue { .. })
    ));
}

#[test]
fn requirement_checks_operator_arity() {
    assert!(Requirement::new("a", Operator::Equals, vec![]).is_err());
    assert!(Requirement::new("a", Operator::NotEquals, vec!["x".into(), "y".into()]).is_err());
    assert!(Requirement::new("a", Operator::GreaterThan, vec!["x".into()]).is_err());
    assert!(Requirement::new("a", Operator::LessThan, vec!["5".into()]).is_ok());
    assert!(Requirement::new("a", Operator::DoesNotExist, vec![]).is_ok());
}

#[test]
fn numeric_comparisons_need_integer_labels() {
    let gt = Requirement::new("replicas", Operator::GreaterThan, vec!["2".into()]).unwrap();
    let lt = Requirement::new("replicas", Operator::LessThan, vec!["2".into()]).unwrap();
    assert!(gt.matches(&labels(&[("replicas", "3")])));
    assert!(!gt.matches(&labels(&[("replicas", "2")])));
    assert!(!gt.matches(&labels(&[("replicas", "x")])));
    assert!(!gt.matches(&labels(&[])));
    assert!(lt.matches(&labels(&[("replicas", "-1")])));
    assert!(Requirement::new("a", Operator::LessThan, vec!["-1".into()]).is_err());
}

#[test]
fn label_selector_and_query_give_the_same_structure() {
    let api = LabelSelector {
        match_labels: Some(labels(&[("a", "b")])),
        match_expressions: Some(vec![
            expr("e", "In", &["x", "y"]),
            expr("f", "DoesNotExist", &[]),
            expr("c", "NotIn", &["d"]),
        ]),
    };
    let from_api = Selector::from_label_selector(&api).unwrap();
    let parsed = Selector::parse("a=b,c notin (d),e in (x,y),!f").unwrap();
    assert_eq!(from_api, parsed);
    assert_eq!(from_api.to_string(), "a=b,c notin (d),e in (x,y),!f");
}

#[test]
fn claim_selectors_match_cluster_claims() {
    let selector = ClusterClaimSelector {
        match_expressions: Some(vec![
            expr("platform.open-cluster-management.io", "In", &["AWS"]),
            expr("region.open-cluster-management.io", "NotIn", &["us-east-1"]),
        ]),
    };
    let aws = [
        claim("platform.open-cluster-management.io", "AWS"),
        claim("region.open-cluster-management.io", "eu-west-1"),
    ];
    let aws_east = [
        claim("platform.open-cluster-management.io", "AWS"),
        claim("region.open-cluster-management.io", "us-east-1"),
    ];
    let gcp = [claim("platform.open-cluster-management.io", "GCP")];
    assert!(claims_match(&selector, &aws).unwrap());
    assert!(!claims_match(&selector, &aws_east).unwrap());
    assert!(!claims_match(&selector, &gcp).unwrap());
    assert!(claims_match(&ClusterClaimSelector::default(), &gcp).unwrap());
    let broken = ClusterClaimSelector {
        match_expressions: Some(vec![expr("a", "Gt", &["1"])]),
    };
    assert!(claims_match(&broken, &gcp).is_err());
}

#[test]
fn claims_become_labels() {
    let claims = [
        claim("id.k8s.io", "abc"),
        ManagedClusterClaim {
            name: None,
            value: Some("x".into()),
        },
        ManagedClusterClaim {
            name: Some("empty".into()),
            value: None,
        },
    ];
    assert_eq!(
        claims_as_labels(&claims),
        labels(&[("id.k8s.io", "abc"), ("empty", "")])
    );
}
