//! CREATE (POST): decoding, generateName, namespace checks, managedFields, validation, commit.

use serde_json::{Value, json};

use super::update::FieldsBy;
use super::{
    Api, Reply, RequestContext, generate_suffix, key_of, meta_mut, meta_str, storage_error, to_version,
};
use super::{from_version, invalid_subject, kinds, schema_of, zero_object};
use crate::fieldmanager::{self, Manager};
use crate::registry::{ResourceInfo, Special};
use crate::status::{self, ApiError};

impl Api {
    /// POST: create an object.
    pub async fn create(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let reply = self.create_object(info, ctx, body).await?;
        if is_namespace(info) && !ctx.dry_run {
            // kube-controller-manager's publishers fill a new namespace at once.
            let name = reply
                .body
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            crate::controllers::namespace_defaults::publish(self, name).await;
        }
        Ok(reply)
    }

    /// POST without the controllers' reactions (which use it themselves).
    pub(crate) async fn create_object(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        body: &[u8],
    ) -> Result<Reply, ApiError> {
        let mut warnings = Vec::new();
        let object = self.decode(info, ctx, body, &mut warnings)?;
        self.create_prepared(info, ctx, object, warnings, FieldsBy::Update)
            .await
    }

    /// Creates a decoded object; with [`FieldsBy::Apply`] it already carries its managedFields
    /// (server-side apply creating it).
    pub(super) async fn create_prepared(
        &self,
        info: &ResourceInfo,
        ctx: &RequestContext,
        mut object: Value,
        mut warnings: Vec<String>,
        fields_by: FieldsBy,
    ) -> Result<Reply, ApiError> {
        let ns = if info.namespaced {
            ctx.namespace.clone()
        } else {
            None
        };
        crate::crd::refuse_create_while_terminating(info, &object)?;
        {
            let m = meta_mut(&mut object);
            if let Some(ns) = &ns {
                match m.get("namespace").and_then(Value::as_str) {
                    Some(body_ns) if !body_ns.is_empty() && body_ns != ns => {
                        return Err(ApiError::bad_request(
                            "the namespace of the provided object does not match the namespace sent on the request",
                        ));
                    }
                    _ => {
                        m.insert("namespace".into(), json!(ns));
                    }
                }
            } else {
                m.remove("namespace");
            }
            let name = m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let generate = m
                .get("generateName")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if name.is_empty() && !generate.is_empty() {
                m.insert("name".into(), json!(format!("{generate}{}", generate_suffix())));
            }
        }
        if let Some(ns) = &ns {
            match self.namespace_exists(ns).await? {
                None => {
                    let subject = status::Subject {
                        group: String::new(),
                        resource: "namespaces".into(),
                        kind: "Namespace".into(),
                    };
                    return Err(ApiError::not_found(&subject, ns));
                }
                // NamespaceLifecycle admission: no new content while the phase is Terminating.
                Some(nsobj)
                    if nsobj.object.pointer("/status/phase").and_then(Value::as_str)
                        == Some("Terminating") =>
                {
                    let subject = info.subject();
                    let name = meta_str(&object, "name").to_string();
                    return Err(ApiError::forbidden(
                        &subject,
                        &name,
                        format!(
                            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                            subject.qualified_resource()
                        ),
                    )
                    .with_details({
                        let mut details = json!({"name": name, "kind": info.resource, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {ns} is being terminated"), "field": "metadata.namespace"}]});
                        if !info.group.is_empty() {
                            details["group"] = json!(info.group);
                        }
                        details
                    }));
                }
                _ => {}
            }
        }
        let name = meta_str(&object, "name").to_string();
        let has_status = info.behavior.as_ref().is_some_and(|b| b.has_status);
        // managedFields of the request's fields (status is reset for types with /status).
        {
            let m = meta_mut(&mut object);
            for f in [
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "selfLink",
            ] {
                m.remove(f);
            }
        }
        // A Node keeps the status it is created with (kubelets register that way); the other
        // kinds with a status subresource start without one.
        let keeps_status = info.storage_group.is_empty() && info.storage_resource == "nodes";
        if has_status
            && !keeps_status
            && let Some(map) = object.as_object_mut()
        {
            map.remove("status");
        }
        let manager_name = ctx.manager_name();
        let api_version = info.api_version();
        let manager = Manager {
            name: &manager_name,
            api_version: &api_version,
            subresource: "",
        };
        // A CSR's creator owns none of its fields: kube-apiserver records no managedFields entry
        // for them (its spec is rewritten with the requester's identity).
        let is_csr = info.behavior.as_ref().is_some_and(|b| b.special == Special::Csr);
        let reset: &[&str] = match (is_csr, has_status) {
            (true, _) => &["spec", "status"],
            (false, true) => &["status"],
            (false, false) => &[],
        };
        let managed = match fields_by {
            FieldsBy::Update => {
                let zero = zero_object(info);
                fieldmanager::update_managed_fields(zero.as_ref(), &object, schema_of(info), reset, &manager)
            }
            FieldsBy::Apply => object
                .pointer("/metadata/managedFields")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        };
        kinds::prepare_create(info, &mut object);
        if info.is_custom() {
            crate::crd::schema::default_custom(info, &mut object);
        }
        crate::admission::mutate(self, info, ctx, &mut object, None)?;
        // A custom resource is validated against the schema of the version it was sent in (as
        // kube-apiserver does), before conversion to the storage version.
        let custom_causes = if info.is_custom() {
            crate::crd::schema::validate_custom(info, &object, None)
        } else {
            Vec::new()
        };
        // The addressed version's tree is not kept beside the storage version's: it would be held
        // while the write waits to become durable.
        let converted = from_version(info, &object)?;
        drop(object);
        let mut object = converted;
        let mut causes = self.validate_meta(info, &object, None);
        if info.is_custom() {
            causes.extend(custom_causes);
        } else {
            causes.extend(kinds::validate(info, &object, None));
            causes.extend(crate::validation::builtin::validate(info, &object, None, ""));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid(&invalid_subject(info), &name, causes));
        }
        if info.is_custom() {
            warnings.extend(crate::validation::finalizer_warnings(super::meta(&object), None));
        }
        crate::admission::validate(self, info, ctx, &object, None).await?;
        {
            let m = meta_mut(&mut object);
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(fieldmanager::now_rfc3339()));
            if info.behavior.as_ref().is_some_and(|b| b.tracks_generation) || info.is_custom() {
                m.insert("generation".into(), json!(1));
            }
            if managed.is_empty() {
                m.remove("managedFields");
            } else {
                m.insert("managedFields".into(), Value::Array(managed));
            }
        }
        crate::crd::on_create(info, &mut object);
        if ctx.dry_run {
            return Ok(Reply {
                code: 201,
                body: to_version(info, &object)?,
                warnings,
            });
        }
        let key = key_of(info, ns.as_deref(), &name);
        let stored = self
            .storage
            .create(&key, object)
            .await
            .map_err(|e| storage_error(info, &name, e))?;
        Ok(Reply {
            code: 201,
            body: to_version(info, &stored.object)?,
            warnings,
        })
    }
}

fn is_namespace(info: &ResourceInfo) -> bool {
    info.behavior.as_ref().map(|b| b.special) == Some(Special::Namespace)
}
