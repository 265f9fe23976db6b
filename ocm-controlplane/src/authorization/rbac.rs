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
//!
//! The policy keeps its rules and bindings with shared strings (`authorization/interner.rs`): a hub's
//! per-cluster roles and bindings repeat the same verbs, groups, resources and subjects.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use super::interner::{Interner, Strings};
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

/// The [`Lists`] of a [`Rule`] or a [`HeldRule`] (same field names, different string types).
macro_rules! lists_of {
    ($rule:expr) => {
        Lists {
            verbs: &$rule.verbs,
            api_groups: &$rule.api_groups,
            resources: &$rule.resources,
            resource_names: &$rule.resource_names,
            non_resource_urls: &$rule.non_resource_urls,
        }
    };
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
        allows(lists_of!(self), attributes)
    }
}

/// A rule's five lists, of owned or shared strings.
struct Lists<'r, S> {
    verbs: &'r [S],
    api_groups: &'r [S],
    resources: &'r [S],
    resource_names: &'r [S],
    non_resource_urls: &'r [S],
}

/// Whether a rule of these lists allows `attributes`.
fn allows<S: AsRef<str>>(rule: Lists<'_, S>, attributes: &Attributes) -> bool {
    if !any_or(rule.verbs, &attributes.verb) {
        return false;
    }
    match &attributes.target {
        Target::NonResource { path } => rule.non_resource_urls.iter().map(AsRef::as_ref).any(|url| {
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
            any_or(rule.api_groups, group)
                && resource_matches(rule.resources, resource, subresource)
                && (rule.resource_names.is_empty()
                    || (!name.is_empty() && rule.resource_names.iter().any(|n| n.as_ref() == name)))
        }
    }
}

fn resource_matches<S: AsRef<str>>(resources: &[S], resource: &str, subresource: &str) -> bool {
    resources.iter().map(AsRef::as_ref).any(|r| {
        r == "*"
            || (subresource.is_empty() && r == resource)
            || (!subresource.is_empty()
                && (r.strip_prefix("*/") == Some(subresource)
                    || r.strip_prefix(resource).and_then(|rest| rest.strip_prefix('/')) == Some(subresource)))
    })
}

fn any_or<S: AsRef<str>>(list: &[S], wanted: &str) -> bool {
    list.iter().map(AsRef::as_ref).any(|x| x == "*" || x == wanted)
}

/// A rule as the [`Policy`] keeps it: each list shared through its [`Interner`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct HeldRule {
    verbs: Strings,
    api_groups: Strings,
    resources: Strings,
    resource_names: Strings,
    non_resource_urls: Strings,
}

impl HeldRule {
    fn from_json(v: &Value, interner: &mut Interner) -> Self {
        let mut list = |field: &str| {
            let items = v
                .get(field)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            interner.list(items.iter().filter_map(Value::as_str))
        };
        HeldRule {
            verbs: list("verbs"),
            api_groups: list("apiGroups"),
            resources: list("resources"),
            resource_names: list("resourceNames"),
            non_resource_urls: list("nonResourceURLs"),
        }
    }

    fn allows(&self, attributes: &Attributes) -> bool {
        allows(lists_of!(self), attributes)
    }

    /// The rule as the public [`Rule`].
    fn to_rule(&self) -> Rule {
        let owned = |list: &Strings| list.iter().map(|s| s.to_string()).collect();
        Rule {
            verbs: owned(&self.verbs),
            api_groups: owned(&self.api_groups),
            resources: owned(&self.resources),
            resource_names: owned(&self.resource_names),
            non_resource_urls: owned(&self.non_resource_urls),
        }
    }
}

/// The rules of a role.
type HeldRules = Box<[HeldRule]>;

/// A subject of a binding.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    kind: Arc<str>,
    name: Arc<str>,
    namespace: Arc<str>,
}

/// Which index of ClusterRoleBindings a subject is found in.
enum SubjectIndex {
    User(Arc<str>),
    Group(Arc<str>),
}

impl Subject {
    fn from_json(v: &Value, interner: &mut Interner) -> Subject {
        Subject {
            kind: interner.string(str_at(v, "/kind")),
            name: interner.string(str_at(v, "/name")),
            namespace: interner.string(str_at(v, "/namespace")),
        }
    }

    /// Whether the subject is `user`; `binding_namespace` is where a RoleBinding lives (a
    /// ServiceAccount subject without namespace means that namespace).
    fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match &*self.kind {
            "User" => user.name == *self.name,
            "Group" => user.groups.iter().any(|g| *g == *self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                !ns.is_empty()
                    && user
                        .name
                        .strip_prefix("system:serviceaccount:")
                        .and_then(|rest| rest.strip_prefix(ns))
                        .and_then(|rest| rest.strip_prefix(':'))
                        == Some(&*self.name)
            }
            _ => false,
        }
    }

    /// How a SubjectAccessReview reason names the subject.
    fn describe(&self, binding_namespace: &str) -> String {
        match &*self.kind {
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

    /// Where a ClusterRoleBinding's subject is indexed: the user name it stands for, or the
    /// group; `None` for a subject that names no one (a ServiceAccount without namespace, an
    /// unknown kind).
    fn cluster_index(&self, interner: &mut Interner) -> Option<SubjectIndex> {
        match &*self.kind {
            "User" => Some(SubjectIndex::User(self.name.clone())),
            "Group" => Some(SubjectIndex::Group(self.name.clone())),
            "ServiceAccount" if !self.namespace.is_empty() => Some(SubjectIndex::User(
                interner.string(&format!("system:serviceaccount:{}:{}", self.namespace, self.name)),
            )),
            _ => None,
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Binding {
    /// `roleRef.kind`: `Role` or `ClusterRole`.
    role_kind: Arc<str>,
    role_name: Arc<str>,
    subjects: Box<[Subject]>,
}

impl Binding {
    fn from_json(v: &Value, interner: &mut Interner) -> Binding {
        Binding {
            role_kind: interner.string(str_at(v, "/roleRef/kind")),
            role_name: interner.string(str_at(v, "/roleRef/name")),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(|s| Subject::from_json(s, interner)).collect())
                .unwrap_or_default(),
        }
    }
}

/// The key of a namespaced object in the policy's maps: `namespace/name` (neither contains a
/// `/`), so that one namespace's objects are a contiguous range in name order.
fn namespaced_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
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
    /// The strings and lists the roles and bindings below share.
    interner: Interner,
    cluster_roles: BTreeMap<Arc<str>, HeldRules>,
    /// By [`namespaced_key`].
    roles: BTreeMap<String, HeldRules>,
    cluster_role_bindings: BTreeMap<Arc<str>, Binding>,
    /// The names of the ClusterRoleBindings naming each user and each group (see
    /// [`Subject::cluster_index`]), so that a request looks only at the bindings of its user and
    /// groups: a hub holds one or more ClusterRoleBindings per managed cluster.
    cluster_bindings_by_user: HashMap<Arc<str>, Vec<Arc<str>>>,
    cluster_bindings_by_group: HashMap<Arc<str>, Vec<Arc<str>>>,
    /// By [`namespaced_key`]: a namespace's bindings in name order.
    role_bindings: BTreeMap<String, Binding>,
}

fn rules_of(object: &Value, interner: &mut Interner) -> HeldRules {
    object
        .get("rules")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|rule| HeldRule::from_json(rule, interner)).collect())
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
        let name = str_at(object, "/metadata/name");
        let ns = str_at(object, "/metadata/namespace");
        match kind {
            "ClusterRole" => {
                let rules = rules_of(object, &mut self.interner);
                let name = self.interner.string(name);
                self.cluster_roles.insert(name, rules);
            }
            "Role" => {
                let rules = rules_of(object, &mut self.interner);
                self.roles.insert(namespaced_key(ns, name), rules);
            }
            "ClusterRoleBinding" => {
                self.remove_cluster_binding(name);
                let name = self.interner.string(name);
                let binding = Binding::from_json(object, &mut self.interner);
                for subject in binding.subjects.iter() {
                    let index = match subject.cluster_index(&mut self.interner) {
                        Some(SubjectIndex::User(user)) => self.cluster_bindings_by_user.entry(user),
                        Some(SubjectIndex::Group(group)) => self.cluster_bindings_by_group.entry(group),
                        None => continue,
                    };
                    let names = index.or_default();
                    if !names.contains(&name) {
                        names.push(name.clone());
                    }
                }
                self.cluster_role_bindings.insert(name, binding);
            }
            "RoleBinding" => {
                let binding = Binding::from_json(object, &mut self.interner);
                self.role_bindings.insert(namespaced_key(ns, name), binding);
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
                self.roles.remove(&namespaced_key(namespace, name));
            }
            "ClusterRoleBinding" => self.remove_cluster_binding(name),
            "RoleBinding" => {
                self.role_bindings.remove(&namespaced_key(namespace, name));
            }
            _ => {}
        }
    }

    fn remove_cluster_binding(&mut self, name: &str) {
        let Some(old) = self.cluster_role_bindings.remove(name) else {
            return;
        };
        for subject in old.subjects.iter() {
            let (index, key) = match subject.cluster_index(&mut self.interner) {
                Some(SubjectIndex::User(user)) => (&mut self.cluster_bindings_by_user, user),
                Some(SubjectIndex::Group(group)) => (&mut self.cluster_bindings_by_group, group),
                None => continue,
            };
            if let Some(names) = index.get_mut(&key) {
                names.retain(|n| **n != *name);
                if names.is_empty() {
                    index.remove(&key);
                }
            }
        }
    }

    /// The ClusterRoleBindings that may name `user`, in name order (as bindings are visited).
    fn cluster_bindings_of(&self, user: &UserInfo) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .cluster_bindings_by_user
            .get(user.name.as_str())
            .into_iter()
            .chain(
                user.groups
                    .iter()
                    .filter_map(|group| self.cluster_bindings_by_group.get(group.as_str())),
            )
            .flatten()
            .map(|name| &**name)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    fn role_rules(&self, binding: &Binding, namespace: &str) -> Option<&HeldRules> {
        self.held_role(&binding.role_kind, namespace, &binding.role_name)
    }

    fn held_role(&self, kind: &str, namespace: &str, name: &str) -> Option<&HeldRules> {
        match kind {
            "ClusterRole" => self.cluster_roles.get(name),
            "Role" => self.roles.get(&namespaced_key(namespace, name)),
            _ => None,
        }
    }

    /// The rules of the role a binding refers to (`kind` Role or ClusterRole), if it exists.
    pub fn role(&self, kind: &str, namespace: &str, name: &str) -> Option<Vec<Rule>> {
        self.held_role(kind, namespace, name)
            .map(|rules| rules.iter().map(HeldRule::to_rule).collect())
    }

    /// Visits the rules granted to `user` in `namespace` (cluster-wide ones first) until `visit`
    /// returns `false`.
    fn visit(
        &self,
        user: &UserInfo,
        namespace: &str,
        visit: &mut dyn FnMut(&HeldRule, &dyn Fn() -> String) -> bool,
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
            for rule in rules.iter() {
                if !visit(rule, &source) {
                    return;
                }
            }
        }
        if namespace.is_empty() {
            return;
        }
        let first = namespaced_key(namespace, "");
        for (key, binding) in self
            .role_bindings
            .range::<str, _>((Bound::Included(first.as_str()), Bound::Unbounded))
        {
            let Some(name) = key.strip_prefix(first.as_str()) else {
                break;
            };
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
            for rule in rules.iter() {
                if !visit(rule, &source) {
                    return;
                }
            }
        }
    }

    /// Whether RBAC allows `attributes` for `user`.
    pub fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let namespace = match &attributes.target {
            Target::Resource { namespace, .. } => namespace.as_deref().unwrap_or_default(),
            Target::NonResource { .. } => "",
        };
        let mut decision = Decision::NoOpinion;
        self.visit(user, namespace, &mut |rule, source| {
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
                rule: rule.to_rule(),
                source: source(),
            });
            true
        });
        out
    }
}
