//! Role-based access control as kube-apiserver evaluates it.
//!
//! A [`Policy`] holds the Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (as the JSON
//! objects the server stores) and answers [`Policy::authorize`]: ClusterRoleBindings are visited
//! first, in name order, then the RoleBindings of the request's namespace; the first rule that
//! allows the request decides, and the reason names the binding, the role and the subject as
//! kube's SubjectAccessReview reasons do. A binding whose role does not exist grants nothing.
//! Nothing is ever denied explicitly: a request no rule allows gets [`Decision::NoOpinion`].
//!
//! Rule matching follows kube: `*` matches any verb, group, resource or URL; a resource rule
//! names `resource`, `resource/subresource` or `*/subresource`; `resourceNames` limits a rule to
//! requests naming one of them (so never a list or create); a non-resource URL ending in `*` is
//! a prefix.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use super::{Attributes, Decision, Target};
use crate::auth::UserInfo;

/// One `PolicyRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    /// `verbs`.
    pub verbs: Vec<String>,
    /// `apiGroups`.
    pub api_groups: Vec<String>,
    /// `resources`.
    pub resources: Vec<String>,
    /// `resourceNames`.
    pub resource_names: Vec<String>,
    /// `nonResourceURLs`.
    pub non_resource_urls: Vec<String>,
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

impl Rule {
    /// A rule from its JSON (`PolicyRule`).
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rule as `PolicyRule` JSON (empty lists left out).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        for (key, list) in [
            ("verbs", &self.verbs),
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !list.is_empty() || key == "verbs" {
                m.insert(key.into(), Value::from(list.clone()));
            }
        }
        Value::Object(m)
    }

    /// Whether this rule allows `attributes`.
    pub fn allows(&self, attributes: &Attributes) -> bool {
        if !any_or(&self.verbs, &attributes.verb) {
            return false;
        }
        match &attributes.target {
            Target::NonResource { path } => self.non_resource_urls.iter().any(|url| {
                url == "*"
                    || url == path
                    || url
                        .strip_suffix('*')
                        .is_some_and(|prefix| path.starts_with(prefix))
            }),
            Target::Resource {
                group,
                resource,
                subresource,
                name,
                ..
            } => {
                any_or(&self.api_groups, group)
                    && self.resource_matches(resource, subresource)
                    && (self.resource_names.is_empty()
                        || (!name.is_empty() && self.resource_names.contains(name)))
            }
        }
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        let combined = if subresource.is_empty() {
            resource.to_string()
        } else {
            format!("{resource}/{subresource}")
        };
        self.resources.iter().any(|r| {
            r == "*"
                || *r == combined
                || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
        })
    }
}

fn any_or(list: &[String], wanted: &str) -> bool {
    list.iter().any(|x| x == "*" || x == wanted)
}

/// A subject of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    kind: String,
    name: String,
    namespace: String,
}

impl Subject {
    fn from_json(v: &Value) -> Subject {
        Subject {
            kind: str_at(v, "/kind").to_string(),
            name: str_at(v, "/name").to_string(),
            namespace: str_at(v, "/namespace").to_string(),
        }
    }

    /// Whether the subject is `user`; `binding_namespace` is where a RoleBinding lives (a
    /// ServiceAccount subject without namespace means that namespace).
    fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.groups.contains(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", self.name)
            }
            _ => false,
        }
    }

    /// How a SubjectAccessReview reason names the subject.
    fn describe(&self, binding_namespace: &str) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                format!("ServiceAccount \"{}/{ns}\"", self.name)
            }
            kind => format!("{kind} \"{}\"", self.name),
        }
    }

    /// The key under which a ClusterRoleBinding's subject is indexed: the user name it stands
    /// for or the group; `None` for a subject that names no one (a ServiceAccount without
    /// namespace, an unknown kind).
    fn cluster_index_key(&self) -> Option<String> {
        match self.kind.as_str() {
            "User" => Some(user_key(&self.name)),
            "Group" => Some(group_key(&self.name)),
            "ServiceAccount" if !self.namespace.is_empty() => Some(user_key(&format!(
                "system:serviceaccount:{}:{}",
                self.namespace, self.name
            ))),
            _ => None,
        }
    }
}

fn user_key(name: &str) -> String {
    format!("user:{name}")
}

fn group_key(name: &str) -> String {
    format!("group:{name}")
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Binding {
    /// `roleRef.kind`: `Role` or `ClusterRole`.
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(v: &Value) -> Binding {
        Binding {
            role_kind: str_at(v, "/roleRef/kind").to_string(),
            role_name: str_at(v, "/roleRef/name").to_string(),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Subject::from_json).collect())
                .unwrap_or_default(),
        }
    }
}

/// Rules that apply to a user, each with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantedRule {
    /// The rule.
    pub rule: Rule,
    /// `ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`.
    pub source: String,
}

/// The RBAC objects of a server.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    cluster_roles: BTreeMap<String, Vec<Rule>>,
    roles: BTreeMap<(String, String), Vec<Rule>>,
    cluster_role_bindings: BTreeMap<String, Binding>,
    /// The names of the ClusterRoleBindings naming each subject (see
    /// [`Subject::cluster_index_key`]), so that a request looks only at the bindings of its user
    /// and groups: a hub holds one or more ClusterRoleBindings per managed cluster.
    cluster_bindings_by_subject: HashMap<String, BTreeSet<String>>,
    /// By namespace, then name.
    role_bindings: BTreeMap<String, BTreeMap<String, Binding>>,
}

fn rules_of(object: &Value) -> Vec<Rule> {
    object
        .get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Rule::from_json).collect())
        .unwrap_or_default()
}

impl Policy {
    /// An empty policy (allows nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an RBAC object (`kind` Role, ClusterRole, RoleBinding or
    /// ClusterRoleBinding; other kinds are ignored).
    pub fn upsert(&mut self, kind: &str, object: &Value) {
        let name = str_at(object, "/metadata/name").to_string();
        let ns = str_at(object, "/metadata/namespace").to_string();
        match kind {
            "ClusterRole" => {
                self.cluster_roles.insert(name, rules_of(object));
            }
            "Role" => {
                self.roles.insert((ns, name), rules_of(object));
            }
            "ClusterRoleBinding" => {
                self.remove_cluster_binding(&name);
                let binding = Binding::from_json(object);
                for key in binding.subjects.iter().filter_map(Subject::cluster_index_key) {
                    self.cluster_bindings_by_subject
                        .entry(key)
                        .or_default()
                        .insert(name.clone());
                }
                self.cluster_role_bindings.insert(name, binding);
            }
            "RoleBinding" => {
                self.role_bindings
                    .entry(ns)
                    .or_default()
                    .insert(name, Binding::from_json(object));
            }
            _ => {}
        }
    }

    /// Removes an RBAC object.
    pub fn remove(&mut self, kind: &str, namespace: &str, name: &str) {
        match kind {
            "ClusterRole" => {
                self.cluster_roles.remove(name);
            }
            "Role" => {
                self.roles.remove(&(namespace.to_string(), name.to_string()));
            }
            "ClusterRoleBinding" => self.remove_cluster_binding(name),
            "RoleBinding" => {
                if let Some(bindings) = self.role_bindings.get_mut(namespace) {
                    bindings.remove(name);
                }
            }
            _ => {}
        }
    }

    fn remove_cluster_binding(&mut self, name: &str) {
        let Some(old) = self.cluster_role_bindings.remove(name) else {
            return;
        };
        for key in old.subjects.iter().filter_map(Subject::cluster_index_key) {
            if let Some(names) = self.cluster_bindings_by_subject.get_mut(&key) {
                names.remove(name);
                if names.is_empty() {
                    self.cluster_bindings_by_subject.remove(&key);
                }
            }
        }
    }

    /// The ClusterRoleBindings that may name `user` (by name, as bindings are visited).
    fn cluster_bindings_of(&self, user: &UserInfo) -> BTreeSet<&str> {
        std::iter::once(user_key(&user.name))
            .chain(user.groups.iter().map(|g| group_key(g)))
            .filter_map(|key| self.cluster_bindings_by_subject.get(&key))
            .flatten()
            .map(String::as_str)
            .collect()
    }

    fn role_rules(&self, binding: &Binding, namespace: &str) -> Option<&Vec<Rule>> {
        match binding.role_kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&binding.role_name),
            "Role" => self
                .roles
                .get(&(namespace.to_string(), binding.role_name.clone())),
            _ => None,
        }
    }

    /// The rules of the role a binding refers to (`kind` Role or ClusterRole), if it exists.
    pub fn role(&self, kind: &str, namespace: &str, name: &str) -> Option<&[Rule]> {
        match kind {
            "ClusterRole" => self.cluster_roles.get(name).map(Vec::as_slice),
            "Role" => self
                .roles
                .get(&(namespace.to_string(), name.to_string()))
                .map(Vec::as_slice),
            _ => None,
        }
    }

    /// Visits the rules granted to `user` in `namespace` (cluster-wide ones first) until `visit`
    /// returns `false`.
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(&Rule, &dyn Fn() -> String) -> bool,
    ) {
        for name in self.cluster_bindings_of(user) {
            let Some(binding) = self.cluster_role_bindings.get(name) else {
                continue;
            };
            let Some(subject) = binding.subjects.iter().find(|s| s.applies_to(user, "")) else {
                continue;
            };
            let Some(rules) = self.role_rules(binding, "") else {
                continue;
            };
            let source = || {
                format!(
                    "ClusterRoleBinding \"{name}\" of {} \"{}\" to {}",
                    binding.role_kind,
                    binding.role_name,
                    subject.describe("")
                )
            };
            for rule in rules {
                if !visit(rule, &source) {
                    return;
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        let Some(bindings) = self.role_bindings.get(namespace) else {
            return;
        };
        for (name, binding) in bindings {
            let Some(subject) = binding.subjects.iter().find(|s| s.applies_to(user, namespace)) else {
                continue;
            };
            let Some(rules) = self.role_rules(binding, namespace) else {
                continue;
            };
            let source = || {
                format!(
                    "RoleBinding \"{name}/{namespace}\" of {} \"{}\" to {}",
                    binding.role_kind,
                    binding.role_name,
                    subject.describe(namespace)
                )
            };
            for rule in rules {
                if !visit(rule, &source) {
                    return;
                }
            }
        }
    }

    /// Whether RBAC allows `attributes` for `user`.
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let namespace = match &attributes.target {
            Target::Resource { namespace, .. } => namespace.clone().unwrap_or_default(),
            Target::NonResource { .. } => String::new(),
        };
        let mut decision = Decision::NoOpinion;
        self.visit(user, &namespace, &mut |rule, source| {
            if rule.allows(attributes) {
                decision = Decision::Allow {
                    reason: format!("RBAC: allowed by {}", source()),
                };
                return false;
            }
            true
        });
        decision
    }

    /// Every rule granted to `user` in `namespace` (what SelfSubjectRulesReview lists), with its
    /// source.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<GrantedRule> {
        let mut out = Vec::new();
        self.visit(user, namespace, &mut |rule, source| {
            out.push(GrantedRule {
                rule: rule.clone(),
                source: source(),
            });
            true
        });
        out
    }
}
