//! The HTTP side: accepting connections, routing Kubernetes paths, applying
//! faults around the store, and the discovery documents.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

use crate::faults::{Control, Fault, Plan, WriteRecord, lock};
use crate::list::ListRequest;
use crate::resource::{Resource, Verb};
use crate::selector::Selectors;
use crate::status::ApiError;
use crate::store::{PatchKind, Reply, Store};
use crate::time::Timestamp;
use crate::validation::FieldValidation;
use crate::watch::{self as watching, WatchRequest};

/// The response body type: whole JSON documents or a watch stream.
pub(crate) type Body = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// State shared by connections, watches and the `Emulator` handle.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Mutex<Store>,
    pub(crate) control: Arc<Mutex<Control>>,
    /// The latest resourceVersion, for watches to wait on.
    pub(crate) rv_tx: watch::Sender<u64>,
    /// Bumped to close every open connection.
    pub(crate) conn_epoch: watch::Sender<u64>,
    /// Set once the emulator stops.
    pub(crate) shutdown: watch::Sender<bool>,
    pub(crate) bookmark_interval: Duration,
    pub(crate) default_watch_timeout: Duration,
    pub(crate) addr: Mutex<Option<SocketAddr>>,
    /// The users of tokens the emulator was told about
    /// ([`crate::Emulator::set_user`]); any other token is a user of its name.
    pub(crate) users: Mutex<HashMap<String, crate::admission::UserInfo>>,
}

impl Shared {
    pub(crate) fn new(
        write_history_limit: usize,
        history_limit: usize,
        bookmark_interval: Duration,
        default_watch_timeout: Duration,
    ) -> Shared {
        let store = Store::new(history_limit, Timestamp::now());
        let rv = store.resource_version();
        Shared {
            store: Mutex::new(store),
            control: Arc::new(Mutex::new(Control::new(write_history_limit))),
            rv_tx: watch::Sender::new(rv),
            conn_epoch: watch::Sender::new(0),
            shutdown: watch::Sender::new(false),
            bookmark_interval,
            default_watch_timeout,
            addr: Mutex::new(None),
            users: Mutex::new(HashMap::new()),
        }
    }

    /// Tells watches about a new version.
    pub(crate) fn publish(&self, rv: u64) {
        self.rv_tx.send_replace(rv);
    }

    /// The user a request with `token` is made as.
    pub(crate) fn user(&self, token: &str) -> crate::admission::UserInfo {
        lock(&self.users)
            .get(token)
            .cloned()
            .unwrap_or_else(|| crate::admission::UserInfo::named(token))
    }
}

/// Resolves once the emulator stops (or its handle is gone).
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}

/// Accepts connections until the listener task is aborted or the emulator stops.
pub(crate) async fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                match accepted {
                    Ok((stream, _)) => {
                        tokio::spawn(serve_connection(stream, shared.clone()));
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                }
            }
            _ = stopped(&mut shutdown) => return,
        }
    }
}

async fn serve_connection(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let kill = Arc::new(Notify::new());
    let svc_shared = shared.clone();
    let svc_kill = kill.clone();
    let service = service_fn(move |req: Request<Incoming>| {
        let shared = svc_shared.clone();
        let kill = svc_kill.clone();
        async move { Ok::<_, Infallible>(handle(req, shared, kill).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .serve_connection(TokioIo::new(stream), service);
    let mut epoch = shared.conn_epoch.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    tokio::select! {
        result = conn => {
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        }
        _ = kill.notified() => tracing::debug!("connection dropped by an injected fault"),
        _ = epoch.changed() => tracing::debug!("connection dropped by drop_connections"),
        _ = stopped(&mut shutdown) => {}
    }
}

fn full(code: u16, body: &Value) -> Response<Body> {
    let bytes = Bytes::from(body.to_string());
    let mut resp = Response::new(Full::new(bytes).map_err(|never| match never {}).boxed());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn error_response(err: &ApiError) -> Response<Body> {
    let mut resp = full(err.code, &err.to_status());
    if let Some(secs) = err.retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

/// A `Warning` header as the API server writes one (`net.NewWarningHeader`):
/// code 299, no agent, the text quoted with `"` and `\` escaped. `None` for
/// a text that no header value can carry (a control character).
fn warning_header(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_bytes(format!("299 - \"{escaped}\"").as_bytes()).ok()
}

/// The API server's own 429 (its max-in-flight filter): `Retry-After` in the
/// header, plain text in the body.
fn too_many_requests_plain(retry_after: u32) -> Response<Body> {
    let bytes = Bytes::from_static(b"Too many requests, please try again later.\n");
    let mut resp = Response::new(Full::new(bytes).map_err(|never| match never {}).boxed());
    *resp.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
    resp
}

/// Who is asking: the bearer token, else the user agent, else "anonymous".
pub(crate) fn client_of<B>(req: &Request<B>) -> String {
    let get = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    get(header::AUTHORIZATION)
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .or_else(|| get(header::USER_AGENT))
        .unwrap_or("anonymous")
        .to_owned()
}

/// A path segment, percent-decoded (an invalid escape is kept as written).
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// The query's `key=value` pairs, decoded as a form (`+` is a space).
fn query_pairs(query: Option<&str>) -> Vec<(String, String)> {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

fn param<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn truthy(v: Option<&str>) -> bool {
    matches!(v, Some("true" | "1" | "True" | "TRUE"))
}

/// A parsed request path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Discovery(Value),
    /// A collection, in one namespace or (None) across all.
    Collection {
        resource: Resource,
        namespace: Option<String>,
    },
    Object {
        resource: Resource,
        namespace: String,
        name: String,
    },
    /// A kind (by its plural) or, with no plural, an API group that the
    /// emulator does not serve.
    NotServed {
        group: String,
        plural: String,
    },
    Unknown,
}

/// What a path names: the kind, the namespace, the object's name (empty for
/// a collection) and whether it is a collection.
type Target = (Resource, Option<String>, String, bool);

/// What answers a request whose path names no collection or object.
enum Elsewhere {
    /// A discovery document.
    Document(Value),
    /// The refusal of a path that names nothing served.
    Refused(ApiError),
}

impl Route {
    /// The collection or object the path names, or what answers instead.
    fn target(self) -> Result<Target, Elsewhere> {
        match self {
            Route::Discovery(doc) => Err(Elsewhere::Document(doc)),
            Route::NotServed { group, plural } => {
                Err(Elsewhere::Refused(ApiError::not_served(&group, &plural)))
            }
            Route::Unknown => Err(Elsewhere::Refused(ApiError::no_route())),
            Route::Collection {
                resource,
                namespace,
            } => Ok((resource, namespace, String::new(), true)),
            Route::Object {
                resource,
                namespace,
                name,
            } => Ok((resource, Some(namespace), name, false)),
        }
    }
}

fn route(path: &str, shared: &Shared) -> Route {
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let s: Vec<&str> = segs.iter().map(String::as_str).collect();
    let addr = lock(&shared.addr)
        .map(|a| a.to_string())
        .unwrap_or_default();
    let (group, version, rest): (&str, &str, &[&str]) = match s.as_slice() {
        ["version"] => return Route::Discovery(crate::discovery::version()),
        ["api"] => return Route::Discovery(crate::discovery::api_versions(&addr)),
        ["apis"] => return Route::Discovery(crate::discovery::api_group_list()),
        ["api", "v1"] => return Route::Discovery(crate::discovery::resource_list("", "v1")),
        ["apis", g] => {
            return crate::discovery::api_group(g)
                .map_or_else(|| not_served(g, ""), Route::Discovery);
        }
        ["apis", g, v] => {
            let list = crate::discovery::resource_list(g, v);
            return if list["resources"].as_array().is_some_and(|r| !r.is_empty()) {
                Route::Discovery(list)
            } else {
                not_served(g, "")
            };
        }
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return Route::Unknown,
    };
    let (namespace, plural, name) = match rest {
        ["namespaces", ns, plural] => (Some(*ns), *plural, None),
        ["namespaces", ns, plural, name] => (Some(*ns), *plural, Some(*name)),
        [plural] => (None, *plural, None),
        [plural, name] => (None, *plural, Some(*name)),
        _ => return Route::Unknown,
    };
    let Some(resource) = Resource::lookup(group, version, plural) else {
        return not_served(group, plural);
    };
    match (namespace, name) {
        (namespace, None) if namespace.is_none() || resource.namespaced() => Route::Collection {
            resource,
            namespace: namespace.map(str::to_owned),
        },
        (namespace, Some(name)) if namespace.is_some() == resource.namespaced() => Route::Object {
            resource,
            namespace: namespace.unwrap_or_default().to_owned(),
            name: name.to_owned(),
        },
        _ => Route::Unknown,
    }
}

fn not_served(group: &str, plural: &str) -> Route {
    Route::NotServed {
        group: group.to_owned(),
        plural: plural.to_owned(),
    }
}

/// The content type (without parameters) and the body as JSON.
async fn read_json(req: Request<Incoming>) -> Result<(Option<String>, Value), ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| s.split(';').next().unwrap_or("").trim().to_owned());
    let bytes = req
        .into_body()
        .collect()
        .await
        .map_err(|e| ApiError::bad_request(format!("reading the request body failed: {e}")))?
        .to_bytes();
    let value = decode_body(content_type.as_deref(), &bytes)?;
    Ok((content_type, value))
}

/// The verb a request asks for, `None` for a method its path does not take:
/// writes to a collection other than POST, and a POST outside a namespace
/// for a namespaced type.
fn verb_of(
    method: &Method,
    collection: bool,
    watching: bool,
    resource: Resource,
    namespace: Option<&str>,
) -> Option<Verb> {
    let verb = match (method, collection) {
        (&Method::GET, _) if watching => Verb::Watch,
        (&Method::GET, true) => Verb::List,
        (&Method::GET, false) => Verb::Get,
        (&Method::POST, true) => Verb::Create,
        (&Method::PUT, false) => Verb::Update,
        (&Method::PATCH, false) => Verb::Patch,
        (&Method::DELETE, false) => Verb::Delete,
        _ => return None,
    };
    let outside_namespace = verb == Verb::Create && resource.namespaced() && namespace.is_none();
    (!outside_namespace).then_some(verb)
}

/// A request body as JSON: `null` when empty, else parsed; 415 for a
/// protobuf body (kubectl's typed writes, `kubectl create configmap`), 400
/// for a body that is not JSON.
pub(crate) fn decode_body(content_type: Option<&str>, bytes: &[u8]) -> Result<Value, ApiError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    if content_type == Some(PROTOBUF) {
        return Err(ApiError::unsupported_body(format!(
            "a {PROTOBUF} body is not decoded by kube-emulator, which takes JSON only; test a client that sends protobuf on kube-apiserver"
        )));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding the request body as JSON: {e}")))
}

/// The media type of kubectl's typed writes, which the emulator refuses.
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// One request as [`handle`] answers it, without HTTP, faults or watches (a
/// watch request is checked, then answered 200 without a stream), for the fuzz
/// targets ([`crate::fuzzing`]): the path routed, the query read, the body
/// decoded, the store read or written through admission. The status code
/// and the body answered.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plain_request(
    shared: &Arc<Shared>,
    client: &str,
    method: &Method,
    path: &str,
    query: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> (u16, Value) {
    let pairs = query_pairs(query);
    let failed = |e: ApiError| (e.code, e.to_status());
    let (resource, namespace, name, collection) = match route(path, shared).target() {
        Ok(target) => target,
        Err(Elsewhere::Document(doc)) => return (200, doc),
        Err(Elsewhere::Refused(e)) => return failed(e),
    };
    let watching = truthy(param(&pairs, "watch"));
    let Some(verb) = verb_of(method, collection, watching, resource, namespace.as_deref()) else {
        return failed(ApiError::method_not_allowed(method.as_str()));
    };
    if verb == Verb::Watch {
        // The stream needs a runtime; its query is checked as `execute` checks it.
        let checked = Selectors::parse(
            param(&pairs, "fieldSelector"),
            param(&pairs, "labelSelector"),
        )
        .and_then(|_| match name.as_str() {
            "" => Ok(()),
            n => Selectors::parse(Some(&format!("metadata.name={n}")), None).map(|_| ()),
        });
        return match checked {
            Ok(()) => (200, Value::Null),
            Err(e) => failed(e),
        };
    }
    let body = if verb.is_write() {
        match decode_body(content_type, body) {
            Ok(v) => v,
            Err(e) => return failed(e),
        }
    } else {
        Value::Null
    };
    let outcome = execute(
        shared,
        client,
        verb,
        resource,
        namespace,
        &name,
        content_type,
        body,
        &pairs,
        Vec::new(),
        false,
    );
    match outcome {
        Outcome::Reply(r, _) => (r.code, r.body),
        Outcome::Error(e) => failed(e),
        Outcome::Stream(_) => (200, Value::Null),
    }
}

fn name_in_body(body: &Value) -> String {
    body.get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// An injected hang: no answer until the emulator shuts down (`reset`: the
/// connection is closed first, so the client sees it broken), then a 503.
async fn hang(shared: &Shared, reset: Option<&Notify>) -> Response<Body> {
    if let Some(kill) = reset {
        kill.notify_one();
    }
    let mut shutdown = shared.shutdown.subscribe();
    stopped(&mut shutdown).await;
    error_response(&ApiError::injected(503, None))
}

/// What the store produced for a request, before after-commit faults.
enum Outcome {
    /// A success, and whether it changed the store.
    Reply(Reply, bool),
    Error(ApiError),
    Stream(Response<Body>),
}

async fn handle(req: Request<Incoming>, shared: Arc<Shared>, kill: Arc<Notify>) -> Response<Body> {
    let client = client_of(&req);
    let method = req.method().clone();
    let pairs = query_pairs(req.uri().query());
    let (resource, namespace, name, collection) = match route(req.uri().path(), &shared).target() {
        Ok(target) => target,
        Err(Elsewhere::Document(doc)) if method == Method::GET => return full(200, &doc),
        Err(Elsewhere::Document(_)) => {
            return error_response(&ApiError::method_not_allowed(method.as_str()));
        }
        Err(Elsewhere::Refused(e)) => return error_response(&e),
    };
    let watching = truthy(param(&pairs, "watch"));
    let Some(verb) = verb_of(
        &method,
        collection,
        watching,
        resource,
        namespace.as_deref(),
    ) else {
        return error_response(&ApiError::method_not_allowed(method.as_str()));
    };
    let ns = namespace.clone().unwrap_or_default();

    let (content_type, body) = if matches!(
        verb,
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete
    ) {
        match read_json(req).await {
            Ok(x) => x,
            Err(e) => {
                lock(&shared.control).count(&client, verb, resource);
                return error_response(&e);
            }
        }
    } else {
        (None, Value::Null)
    };
    let target = if verb == Verb::Create {
        name_in_body(&body)
    } else {
        name.clone()
    };

    let plan: Plan = {
        let mut control = lock(&shared.control);
        control.count(&client, verb, resource);
        control.plan(&client, verb, resource, &target)
    };
    if !plan.latency.is_zero() {
        tokio::time::sleep(plan.latency).await;
    }
    match &plan.before {
        Some(Fault::Status { code, retry_after }) => {
            return error_response(&ApiError::injected(*code, *retry_after));
        }
        Some(Fault::TooManyRequestsPlain { retry_after }) => {
            return too_many_requests_plain(*retry_after);
        }
        Some(Fault::Forbidden) => {
            return error_response(&ApiError::forbidden(
                &client,
                verb.as_str(),
                resource,
                &ns,
                &target,
            ));
        }
        Some(Fault::Hang) => return hang(&shared, None).await,
        Some(Fault::Reset) => return hang(&shared, Some(&kill)).await,
        _ => {}
    }

    let outcome = execute(
        &shared,
        &client,
        verb,
        resource,
        namespace,
        &name,
        content_type.as_deref(),
        body,
        &pairs,
        plan.watch.clone(),
        plan.stale_read,
    );

    if verb.is_write() {
        let written = Written {
            client: &client,
            verb,
            resource,
            namespace: &ns,
            name: &target,
        };
        written.record(&shared, &outcome, plan.after.clone());
    }

    match &plan.after {
        Some(Fault::StatusAfterCommit { code }) => {
            return error_response(&ApiError::injected(*code, None));
        }
        Some(Fault::DelayAfterCommit(d)) => tokio::time::sleep(*d).await,
        Some(Fault::HangAfterCommit) => return hang(&shared, None).await,
        Some(Fault::AnswerLost) => return hang(&shared, Some(&kill)).await,
        _ => {}
    }
    match outcome {
        Outcome::Reply(r, _) => {
            let mut resp = full(r.code, &r.body);
            for text in &r.warnings {
                if let Some(value) = warning_header(text) {
                    resp.headers_mut().append(header::WARNING, value);
                }
            }
            resp
        }
        Outcome::Error(e) => error_response(&e),
        Outcome::Stream(resp) => resp,
    }
}

#[allow(clippy::too_many_arguments)]
fn execute(
    shared: &Arc<Shared>,
    client: &str,
    verb: Verb,
    resource: Resource,
    namespace: Option<String>,
    name: &str,
    content_type: Option<&str>,
    body: Value,
    pairs: &[(String, String)],
    watch_faults: Vec<Fault>,
    stale_read: bool,
) -> Outcome {
    let now = Timestamp::now();
    let ns = namespace.clone().unwrap_or_default();
    let selectors =
        match Selectors::parse(param(pairs, "fieldSelector"), param(pairs, "labelSelector")) {
            Ok(s) => s,
            Err(e) => return Outcome::Error(e),
        };
    let fields = match field_validation(verb, pairs) {
        Ok(f) => f.unwrap_or(FieldValidation::Strict),
        Err(e) => return Outcome::Error(e),
    };
    let result = match verb {
        Verb::Watch => {
            let mut selectors = selectors;
            if !name.is_empty() {
                match Selectors::parse(Some(&format!("metadata.name={name}")), None) {
                    Ok(s) => selectors = s,
                    Err(e) => return Outcome::Error(e),
                }
            }
            let timeout = param(pairs, "timeoutSeconds")
                .and_then(|t| t.parse::<u64>().ok())
                .map_or(shared.default_watch_timeout, Duration::from_secs);
            let req = WatchRequest {
                resource,
                namespace,
                selectors,
                resource_version: param(pairs, "resourceVersion").map(str::to_owned),
                bookmarks: truthy(param(pairs, "allowWatchBookmarks")),
                send_initial_events: truthy(param(pairs, "sendInitialEvents")),
                timeout,
                faults: watch_faults,
            };
            let stream = watching::start(shared.clone(), req).map(|item| {
                item.map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            });
            let mut resp = Response::new(BodyExt::boxed(StreamBody::new(stream)));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Outcome::Stream(resp);
        }
        Verb::List => {
            let req = ListRequest {
                resource_version: param(pairs, "resourceVersion").map(str::to_owned),
                version_match: param(pairs, "resourceVersionMatch").map(str::to_owned),
                limit: param(pairs, "limit").map(str::to_owned),
                continue_token: param(pairs, "continue").map(str::to_owned),
            };
            let store = lock(&shared.store);
            crate::list::list(&store, resource, namespace.as_deref(), &selectors, &req)
                .map(|r| (r, false))
        }
        Verb::Get if stale_read => lock(&shared.store)
            .stale_get(resource, &ns, name)
            .map(|r| (r, false)),
        Verb::Get => lock(&shared.store)
            .get(resource, &ns, name)
            .map(|r| (r, false)),
        Verb::Create | Verb::Update | Verb::Patch | Verb::Delete => {
            let w = Write {
                verb,
                resource,
                name,
                content_type,
                fields,
            };
            let dry = param(pairs, "dryRun").is_some_and(|v| !v.is_empty());
            write(shared, &w, &ns, &body, now, client, dry)
        }
    };
    match result {
        Ok((r, changed)) => Outcome::Reply(r, changed),
        Err(e) => Outcome::Error(e),
    }
}

fn patch_kind(content_type: Option<&str>) -> Result<PatchKind, ApiError> {
    match content_type {
        Some("application/merge-patch+json") => Ok(PatchKind::Merge),
        Some("application/strategic-merge-patch+json") => Ok(PatchKind::StrategicMerge),
        Some("application/json-patch+json") => Ok(PatchKind::Json),
        Some(apply @ "application/apply-patch+yaml") => Err(ApiError::apply_unsupported(apply)),
        other => Err(ApiError::unsupported_media_type(other.unwrap_or(""))),
    }
}

/// The `fieldValidation` of a write (create, update, patch); `None` for the
/// other verbs, which take no body to decode.
fn field_validation(
    verb: Verb,
    pairs: &[(String, String)],
) -> Result<Option<FieldValidation>, ApiError> {
    let options = match verb {
        Verb::Create => "CreateOptions",
        Verb::Update => "UpdateOptions",
        Verb::Patch => "PatchOptions",
        Verb::Get | Verb::List | Verb::Watch | Verb::Delete => return Ok(None),
    };
    FieldValidation::parse(param(pairs, "fieldValidation"), options).map(Some)
}

/// Who wrote what, for the write history.
struct Written<'a> {
    client: &'a str,
    verb: Verb,
    resource: Resource,
    namespace: &'a str,
    name: &'a str,
}

impl Written<'_> {
    /// Records the write and what the store made of it; `spoiled_by` is the
    /// fault that then replaced the answer.
    fn record(&self, shared: &Shared, outcome: &Outcome, spoiled_by: Option<Fault>) {
        let (code, committed, rv, object) = match outcome {
            Outcome::Reply(r, changed) => {
                let rv = r.deleted_at.clone().or_else(|| {
                    r.body
                        .get("metadata")
                        .and_then(|m| m.get("resourceVersion"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
                (r.code, *changed, rv, Some(r.body.clone()))
            }
            Outcome::Error(e) => (e.code, false, None, None),
            Outcome::Stream(_) => (200, false, None, None),
        };
        lock(&shared.control).record_write(WriteRecord {
            at: SystemTime::now(),
            client: self.client.to_owned(),
            verb: self.verb,
            resource: self.resource,
            namespace: self.namespace.to_owned(),
            name: self.name.to_owned(),
            code,
            committed,
            resource_version: rv,
            spoiled_by,
            object,
        });
    }
}

/// A write made inside the emulator by its own controller (the
/// [`crate::Coordinator`]) as `client`: counted, admitted, stored, published to
/// watches and recorded as a client's write is, with no fault (those are
/// injected at the HTTP layer, which it does not cross). `body` is the
/// object; for an update, its `resourceVersion` is the precondition.
pub(crate) fn internal_write(
    shared: &Shared,
    client: &str,
    verb: Verb,
    resource: Resource,
    namespace: &str,
    body: &Value,
) -> Result<Reply, ApiError> {
    let name = name_in_body(body);
    lock(&shared.control).count(client, verb, resource);
    let w = Write {
        verb,
        resource,
        name: &name,
        content_type: None,
        fields: FieldValidation::Strict,
    };
    let outcome = match write(shared, &w, namespace, body, Timestamp::now(), client, false) {
        Ok((reply, changed)) => Outcome::Reply(reply, changed),
        Err(e) => Outcome::Error(e),
    };
    let written = Written {
        client,
        verb,
        resource,
        namespace,
        name: &name,
    };
    written.record(shared, &outcome, None);
    match outcome {
        Outcome::Reply(reply, _) => Ok(reply),
        Outcome::Error(e) => Err(e),
        Outcome::Stream(_) => Err(ApiError::method_not_allowed("WATCH")),
    }
}

/// A write, besides its namespace and body.
struct Write<'a> {
    verb: Verb,
    resource: Resource,
    name: &'a str,
    content_type: Option<&'a str>,
    fields: FieldValidation,
}

/// Runs `w` on `store`.
fn apply(
    store: &mut Store,
    w: &Write<'_>,
    ns: &str,
    body: &Value,
    now: Timestamp,
) -> Result<Reply, ApiError> {
    let (resource, name, fields) = (w.resource, w.name, w.fields);
    match w.verb {
        Verb::Create => store.create(resource, ns, body.clone(), now, fields),
        Verb::Update => store.update(resource, ns, name, body.clone(), now, fields),
        Verb::Patch => {
            let kind = patch_kind(w.content_type)?;
            store.patch(resource, ns, name, kind, body, fields)
        }
        Verb::Delete => store.delete(resource, ns, name, (!body.is_null()).then_some(body)),
        Verb::Get | Verb::List | Verb::Watch => Err(ApiError::method_not_allowed("GET")),
    }
}

/// Runs a write under the store lock, through admission (the
/// ValidatingAdmissionPolicies bound, evaluated on the object the write would
/// store), and tells watches when the version moved; the flag says whether it
/// did (a no-op update does not). `dryRun=All` (`dry`) runs it on a copy of the
/// store, which is then thrown away, so the answer is what the write would have
/// been.
fn write(
    shared: &Shared,
    w: &Write<'_>,
    ns: &str,
    body: &Value,
    now: Timestamp,
    client: &str,
    dry: bool,
) -> Result<(Reply, bool), ApiError> {
    let mut store = lock(&shared.store);
    let admitting = crate::admission::any_binding(&store);
    let mut warnings = Vec::new();
    if dry || admitting {
        let mut copy = store.scratch();
        let reply = apply(&mut copy, w, ns, body, now)?;
        if admitting {
            let stored_ns = if w.resource.namespaced() { ns } else { "" };
            let name = match w.verb {
                Verb::Create => reply.body.pointer("/metadata/name").and_then(Value::as_str),
                _ => Some(w.name),
            }
            .unwrap_or_default();
            let user = shared.user(client);
            let attempt = crate::admission::Attempt {
                verb: w.verb,
                resource: w.resource,
                namespace: stored_ns,
                name,
                object: (w.verb != Verb::Delete).then_some(&reply.body),
                old: store.get_object(w.resource, stored_ns, name),
                user: &user,
            };
            warnings = crate::admission::admit(&store, &attempt)?;
        }
        if dry {
            let mut reply = reply;
            reply.warnings.extend(warnings);
            return Ok((reply, false));
        }
    }
    let before = store.resource_version();
    let result = apply(&mut store, w, ns, body, now);
    let after = store.resource_version();
    drop(store);
    if after != before {
        shared.publish(after);
    }
    result.map(|mut r| {
        r.warnings.extend(warnings);
        (r, after != before)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_decoding_and_query_parsing() {
        let pairs = query_pairs(Some("fieldSelector=metadata.name%3Dmy-lease&watch=true&x"));
        assert_eq!(
            param(&pairs, "fieldSelector"),
            Some("metadata.name=my-lease")
        );
        assert!(truthy(param(&pairs, "watch")));
        assert_eq!(param(&pairs, "x"), Some(""));
        assert_eq!(param(&query_pairs(Some("a=b+c%2B")), "a"), Some("b c+"));
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("a+b%3A"), "a+b:");
    }

    #[test]
    fn routes_kubernetes_paths() {
        let shared = Shared::new(10, 10, Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(
            route(
                "/apis/coordination.k8s.io/v1/namespaces/default/leases/x",
                &shared
            ),
            Route::Object {
                resource: Resource::Lease,
                namespace: "default".into(),
                name: "x".into()
            }
        );
        assert_eq!(
            route("/api/v1/namespaces/kube-system", &shared),
            Route::Object {
                resource: Resource::Namespace,
                namespace: String::new(),
                name: "kube-system".into()
            }
        );
        assert_eq!(
            route("/api/v1/configmaps", &shared),
            Route::Collection {
                resource: Resource::ConfigMap,
                namespace: None
            }
        );
        assert_eq!(
            route("/api/v1/namespaces/default/namespaces/x", &shared),
            Route::Unknown
        );
        assert_eq!(
            route("/apis/coordination.k8s.io/v1/namespaces", &shared),
            not_served("coordination.k8s.io", "namespaces")
        );
        for path in [
            "/apis/apps/v1/namespaces/default/deployments",
            "/apis/apps/v1/namespaces/default/deployments/d",
            "/apis/apps/v1/deployments",
        ] {
            assert_eq!(
                route(path, &shared),
                not_served("apps", "deployments"),
                "{path}"
            );
        }
        assert_eq!(route("/apis/apps/v1", &shared), not_served("apps", ""));
        assert_eq!(route("/apis/apps", &shared), not_served("apps", ""));
        assert_eq!(
            route("/api/v1/namespaces/default/serviceaccounts/sa", &shared),
            not_served("", "serviceaccounts")
        );
        assert_eq!(route("/openapi/v3", &shared), Route::Unknown);
        assert!(matches!(route("/version", &shared), Route::Discovery(_)));
    }
}
