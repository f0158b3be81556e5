//! rmcp's `ServerHandler` over the served catalog and the executor: `tools/list`,
//! `tools/call`, `tasks/get`, `tasks/cancel`, `logging/setLevel`, `subscriptions/listen`, and
//! `list_changed` announcements; the skills' methods and files when a skills folder is served;
//! the pages of MCP Apps ([`super::apps`]) as `ui://` resources.

// MCP logging is deprecated by SEP-2577 but still in both revisions we serve.
#![allow(deprecated)]

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestMethod,
    CompleteRequestParams, CompleteResult, CreateTaskResult, GetPromptRequestMethod,
    GetPromptRequestParams, GetPromptResponse, GetTaskParams, GetTaskResult,
    ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ReadResourceRequestMethod,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig,
    SetLevelRequestParams, SubscribeRequestMethod, SubscribeRequestParams, SubscriptionFilter,
    Tool, UnsubscribeRequestMethod, UnsubscribeRequestParams, UpdateTaskParams,
};
#[cfg(feature = "skills")]
use rmcp::model::{
    GetSkillRequestMethod, GetSkillRequestParams, GetSkillResult, ListSkillsRequestMethod,
    ListSkillsResult, ReadResourceDirectoryRequestMethod, ReadResourceDirectoryRequestParams,
    ReadResourceDirectoryResult,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use super::caller::{McpCaller, Rounds, log_level};
use super::{McpServer, apps, call, listing, progress};
use crate::calls::finish::{Announce, Rules, finish};
use crate::lock;
use crate::tools::context::{Caller, ToolContext};
use crate::tools::result::{ArcStr, ToolCall, ToolCallResult};

/// The `ServerHandler` methods that are not about tools: the user's handler answers them
/// ([`super::others`]); without one, they are not found.
macro_rules! answered_by_others {
    ($($method:ident($request:ty) -> $answer:ty, $rpc:ty;)*) => {$(
        async fn $method(
            &self,
            request: $request,
            context: RequestContext<RoleServer>,
        ) -> Result<$answer, ErrorData> {
            match &self.shared.others {
                Some(o) => o.$method(request, context).await,
                None => Err(ErrorData::method_not_found::<$rpc>()),
            }
        }
    )*};
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let builder = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_tasks()
            .enable_logging();
        #[cfg(feature = "skills")]
        let builder = match &self.shared.skills {
            Some(_) => builder.enable_skills_with_directory_read(),
            None => builder,
        };
        let mut capabilities = builder.build();
        if let Some(others) = &self.shared.others {
            let theirs = others.capabilities();
            capabilities.resources = theirs.resources;
            capabilities.prompts = theirs.prompts;
            capabilities.completions = theirs.completions;
        }
        // Skills and pages ride on resources: they are read with `resources/read`.
        if self.serves_resources() && capabilities.resources.is_none() {
            capabilities.resources = Some(rmcp::model::ResourcesCapability::default());
        }
        if self.shared.apps {
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(apps::APPS_EXTENSION_ID.to_owned(), apps::capability());
        }
        let mut config = ServerConfig::new(capabilities).with_server_info(self.shared.info.clone());
        if let Some(text) = &self.shared.instructions {
            config = config.with_instructions(text.clone());
        }
        config
    }

    /// The served tools, without those only a page may call for a client that renders no
    /// page (MCP Apps).
    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let view = self.current();
        let cursor = request.and_then(|r| r.cursor);
        let renders_pages = Client::of(&context).renders_pages();
        let (_, tools) = view.for_client(renders_pages, &self.shared.renames);
        listing::page(tools, cursor.as_deref(), self.shared.page_size)
    }

    /// The tool published as `name`, as `tools/list` lists it.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let view = self.current();
        let at = view.catalog.position(self.shared.renames.goondan(name))?;
        view.tools(&self.shared.renames).get(at).cloned()
    }

    /// One `tools/call`: what it needs before it runs, the executor, then the result as MCP
    /// sees it. Refuses a call that must run as a task for a client without tasks, and a
    /// 2026-07-28 request whose state fails its seal.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let shared = &self.shared;
        // The name the client called.
        let published = request.name;
        let client = Client::of(&context);
        // A client that renders no page cannot call what only a page may (MCP Apps).
        let view = self.current();
        let renders_pages = client.renders_pages();
        let catalog = Arc::clone(view.for_client(renders_pages, &shared.renames).0);
        let name = shared.renames.goondan(&published);
        let for_pages_only = !renders_pages
            && view
                .catalog
                .get(name)
                .and_then(crate::tools::catalog::CatalogItem::ui)
                .is_some_and(|ui| !ui.visible_to_model());
        drop(view);
        let (state, responses) = (request.request_state, request.input_responses);
        let mut builder =
            ToolContext::builder_in(Arc::clone(&shared.workdir)).agent_name(&shared.agent_name);
        // The call's progress reports, when the client asked for them.
        let mut reports = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (sink, rx) = progress::queue(token);
            builder = builder.progress(sink);
            reports = Some(rx);
        }
        let client_has_tasks = client.capabilities().is_some_and(|c| c.supports_tasks());
        let item = catalog.get(name);
        // A listed tool's name is the catalog's own, shared rather than copied.
        let name = item.map_or_else(|| ArcStr::from(name), |i| i.name().as_arc_str().clone());
        let needs_tasks = item.is_some_and(|item| {
            item.annotations().is_some_and(|a| {
                a.task_support == Some(crate::tools::annotations::TaskSupport::Required)
            })
        });
        let output_schema = item.and_then(|i| i.output_schema().cloned());
        if needs_tasks && !client_has_tasks {
            return Err(tasks_required());
        }
        let call = crate::dialect::mcp::call(
            call_id(&context.id),
            name,
            request.arguments.map(Value::Object),
        );
        let caller = Arc::new(self.caller(
            &context,
            &client,
            &published,
            &call.args,
            state.as_deref(),
            responses,
        )?);
        #[cfg(feature = "code-mode")]
        if shared.code.is_some() {
            builder = builder.step_calls(Arc::new(ServedCalls {
                executor: self.executor().clone(),
                catalog: Arc::clone(&self.current().inner),
            }));
        }
        let ctx = builder.caller(caller.clone() as Arc<dyn Caller>).build();
        let served = served_span(&call, &context);
        // Only the client and the cancellation are kept of the request from here on.
        let RequestContext { peer, ct, .. } = context;
        let executor = self.executor();
        let result = {
            let mut work = std::pin::pin!(executor.execute(call, &ctx, &catalog));
            tracing::Instrument::instrument(
                drive(
                    work.as_mut(),
                    (&peer, &ct),
                    ctx.cancellation(),
                    Some(&caller),
                    reports.as_mut(),
                ),
                served,
            )
            .await
        };
        // What a call that has not finished needs: the token that stops it.
        let cancel = result.is_pending().then(|| ctx.cancellation().clone());
        drop(ctx);
        // Its log lines before its answer.
        caller.logged().await;
        match caller.finish() {
            Rounds::Done => {}
            Rounds::InputRequired(more) => return Ok(CallToolResponse::InputRequired(more)),
            Rounds::Missing(error) => return Err(error),
        }
        if call::is_unknown_tool(&result) {
            let error = match (for_pages_only, &result.error) {
                (true, Some(e)) => Some(e.clone().with_suggestion(format!(
                    "`{published}` is called from its MCP Apps page only (visibility: [\"app\"]); \
                     a host that renders pages declares the `{}` extension",
                    apps::APPS_EXTENSION_ID
                ))),
                (_, e) => e.clone(),
            };
            return Err(call::unknown_tool(&published, error.as_ref()));
        }
        let (Some(handle), Some(cancel)) = (result.handle.clone(), cancel) else {
            return Ok(call::call_tool_result(Cow::Owned(result), output_schema.as_deref()).into());
        };
        if client_has_tasks {
            caller.become_task();
            let task = shared.tasks.create(&handle, cancel, output_schema, caller);
            if let Some(rx) = reports {
                progress::forward_rest(peer.clone(), rx);
            }
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        // A client without tasks waits, bounded by the export's timeout.
        let limit = executor
            .registry()
            .get(&result.tool_name)
            .and_then(|e| e.export().timeout())
            .unwrap_or(shared.pending_wait);
        let pending = executor.pending().clone();
        let mut wait = std::pin::pin!(tokio::time::timeout(limit, pending.wait(&handle)));
        let waited = drive(wait.as_mut(), (&peer, &ct), &cancel, None, reports.as_mut()).await;
        let finished = match waited {
            Ok(Some(done)) => done,
            Ok(None) => gone(&result, &handle),
            Err(_) => {
                cancel.cancel();
                timed_out(&result, limit)
            }
        };
        caller.logged().await;
        Ok(call::call_tool_result(Cow::Owned(finished), output_schema.as_deref()).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let pending = self.executor().pending();
        let task = self.shared.tasks.get(&request.task_id, pending)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared
            .tasks
            .update(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.shared.tasks.cancel(&request.task_id)
    }

    /// Sends `notifications/tools/list_changed` to the client each time the served catalog's
    /// names change, until the client is gone.
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let peer = context.peer;
        let mut changes = self.catalog_changes();
        tokio::spawn(async move {
            while changes.next().await {
                if peer.notify_tool_list_changed().await.is_err() || peer.is_transport_closed() {
                    break;
                }
            }
        });
    }

    answered_by_others! {
        complete(CompleteRequestParams) -> CompleteResult, CompleteRequestMethod;
        get_prompt(GetPromptRequestParams) -> GetPromptResponse, GetPromptRequestMethod;
        list_prompts(Option<PaginatedRequestParams>) -> ListPromptsResult, ListPromptsRequestMethod;
        list_resource_templates(Option<PaginatedRequestParams>) -> ListResourceTemplatesResult,
            ListResourceTemplatesRequestMethod;
        subscribe(SubscribeRequestParams) -> (), SubscribeRequestMethod;
        unsubscribe(UnsubscribeRequestParams) -> (), UnsubscribeRequestMethod;
    }

    /// The skills' `SKILL.md` files and the pages of MCP Apps first (on the first page), then
    /// the user's resources.
    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let first_page = request.as_ref().and_then(|r| r.cursor.as_ref()).is_none();
        let mut listed = match &self.shared.others {
            Some(o) => o.list_resources(request, context).await?,
            None if self.serves_resources() => ListResourcesResult::default(),
            None => return Err(ErrorData::method_not_found::<ListResourcesRequestMethod>()),
        };
        if self.serves_resources() && first_page {
            let mut resources = Vec::new();
            #[cfg(feature = "skills")]
            if let Some(skills) = &self.shared.skills {
                resources = skills.resources();
            }
            resources.extend(self.shared.pages.resources());
            resources.append(&mut listed.resources);
            listed.resources = resources;
        }
        Ok(listed)
    }

    /// A page of MCP Apps, a `skill://` file from the skills, any other resource from the
    /// user's handler.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if let Some(contents) = self.shared.pages.read(&request.uri) {
            return Ok(rmcp::model::ReadResourceResult::new(vec![contents]).into());
        }
        #[cfg(feature = "skills")]
        if let Some(skills) = &self.shared.skills
            && request.uri.starts_with("skill://")
        {
            return skills
                .read_resource(&request.uri)
                .map(Into::into)
                .ok_or_else(|| ErrorData::resource_not_found(request.uri, None));
        }
        match &self.shared.others {
            Some(o) => o.read_resource(request, context).await,
            None if self.serves_resources() => {
                Err(ErrorData::resource_not_found(request.uri, None))
            }
            None => Err(ErrorData::method_not_found::<ReadResourceRequestMethod>()),
        }
    }

    #[cfg(feature = "skills")]
    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, ErrorData> {
        match &self.shared.skills {
            Some(skills) => Ok(skills.list_skills()),
            None => Err(ErrorData::method_not_found::<ListSkillsRequestMethod>()),
        }
    }

    #[cfg(feature = "skills")]
    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, ErrorData> {
        match &self.shared.skills {
            Some(skills) => skills.get_skill(&request.uri),
            None => Err(ErrorData::method_not_found::<GetSkillRequestMethod>()),
        }
    }

    #[cfg(feature = "skills")]
    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, ErrorData> {
        match &self.shared.skills {
            Some(skills) => skills.read_resource_directory(&request.uri),
            None => Err(ErrorData::method_not_found::<
                ReadResourceDirectoryRequestMethod,
            >()),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *lock(&self.session.log_level) = Some(log_level(request.level));
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // The names before the acknowledgement: what the stream announces changes against.
        *lock(&self.session.listen_names) = Some(names_of(&self.catalog()));
        // Only the tool list changes here; rmcp keeps what was both asked and announced.
        let mut accepted = SubscriptionFilter::default();
        accepted.tools_list_changed = requested.tools_list_changed;
        Some(accepted)
    }

    /// `subscriptions/listen`: a `tools/list_changed` notification on the stream each time
    /// the served names change, until the client closes it.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink();
        let mut changes = self.catalog_changes();
        if let Some(names) = lock(&self.session.listen_names).take() {
            changes.names = names;
        }
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = changes.next() => {
                    if !changed || sink.notify_tool_list_changed().await.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// The route of the calls a code call's program makes on a server: each is a call through
/// the server's executor, checked against the served tools.
#[cfg(feature = "code-mode")]
struct ServedCalls {
    executor: crate::calls::executor::ToolExecutor,
    catalog: Arc<crate::tools::catalog::ToolCatalog>,
}

#[cfg(feature = "code-mode")]
impl crate::tools::context::StepCalls for ServedCalls {
    fn catalog(&self) -> &crate::tools::catalog::ToolCatalog {
        &self.catalog
    }

    fn call(
        &self,
        call: crate::tools::result::ToolCall,
        _index: usize,
        parent: &ToolContext,
    ) -> crate::tools::context::CallFuture {
        let (executor, catalog, parent) = (
            self.executor.clone(),
            Arc::clone(&self.catalog),
            parent.clone(),
        );
        Box::pin(async move { Ok(executor.execute(call, &parent, &catalog).await) })
    }

    /// A served program is not journaled: nothing of it is left to match.
    fn ended(
        &self,
        _parent: &ToolContext,
        _made: usize,
    ) -> Result<(), crate::tools::error::ToolError> {
        Ok(())
    }
}

impl McpServer {
    /// Whether the server answers `resources/*` itself: it serves skills or pages.
    fn serves_resources(&self) -> bool {
        #[cfg(feature = "skills")]
        if self.shared.skills.is_some() {
            return true;
        }
        !self.shared.pages.is_empty()
    }

    /// The client as the caller of one call: a session's client is asked in place; a
    /// 2026-07-28 request answers from its `inputResponses` and sealed `requestState`.
    fn caller(
        &self,
        context: &RequestContext<RoleServer>,
        client: &Client,
        published: &str,
        args: &Value,
        state: Option<&str>,
        responses: Option<std::collections::BTreeMap<String, Value>>,
    ) -> Result<McpCaller, ErrorData> {
        let capabilities = client.capabilities();
        let peer = context.peer.clone();
        if !client.rounds {
            let level = *lock(&self.session.log_level);
            return Ok(McpCaller::session(peer, capabilities, level));
        }
        let level = context.meta.log_level().map(log_level);
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        hash_canonical(args, &mut hasher);
        let args_hash = std::hash::Hasher::finish(&hasher).to_le_bytes();
        let binding = [published.as_bytes(), &[0], &args_hash[..]].concat();
        McpCaller::rounds(
            peer,
            capabilities,
            level,
            Arc::clone(&self.shared.state_codec),
            binding,
            state,
            responses,
        )
    }

    /// The changes of the served catalog's names, as one listener sees them: each listener
    /// compares with the names it saw last, so no other reader of the catalog can take a
    /// change from it.
    fn catalog_changes(&self) -> CatalogChanges {
        let mut registry = self.executor().registry().subscribe_changes();
        registry.mark_unchanged();
        CatalogChanges {
            server: self.clone(),
            names: names_of(&self.catalog()),
            registry,
        }
    }
}

/// The client of one call, as its request and its session's handshake tell: rmcp's
/// `protocol_version` and `client_capabilities` by the same rule, the handshake read in place
/// rather than parts of it copied for each call.
struct Client {
    /// A 2026-07-28 request: answers come in rounds of input-required results.
    rounds: bool,
    /// The capabilities the request declares itself (a 2026-07-28 request does).
    declared: Option<rmcp::model::ClientCapabilities>,
    /// The session's handshake.
    handshake: Option<Arc<rmcp::model::InitializeRequestParams>>,
}

impl Client {
    fn of(context: &RequestContext<RoleServer>) -> Self {
        let handshake = context.peer.peer_info();
        let rounds = match context.meta.protocol_version() {
            Some(version) => !version.has_initialize(),
            None => handshake
                .as_ref()
                .is_some_and(|i| !i.protocol_version.has_initialize()),
        };
        Self {
            rounds,
            declared: context.meta.client_capabilities(),
            handshake,
        }
    }

    /// Whether it renders the pages of MCP Apps: it declared the extension.
    fn renders_pages(&self) -> bool {
        apps::client_renders_pages(self.capabilities())
    }

    /// What it declared it can do: its request's own declaration, else (on a session) its
    /// handshake's.
    fn capabilities(&self) -> Option<&rmcp::model::ClientCapabilities> {
        self.declared.as_ref().or(match &self.handshake {
            Some(handshake) if !self.rounds => Some(&handshake.capabilities),
            _ => None,
        })
    }
}

/// See [`McpServer::catalog_changes`].
struct CatalogChanges {
    server: McpServer,
    names: Vec<String>,
    registry: tokio::sync::watch::Receiver<u64>,
}

impl CatalogChanges {
    /// Waits for the next change of the names (at once when they differ already); `false`
    /// once the registry is gone.
    async fn next(&mut self) -> bool {
        loop {
            let names = names_of(&self.server.catalog());
            if names != self.names {
                self.names = names;
                return true;
            }
            if self.registry.changed().await.is_err() {
                return false;
            }
        }
    }
}

fn names_of(catalog: &crate::tools::catalog::ToolCatalog) -> Vec<String> {
    catalog.names().map(str::to_owned).collect()
}

/// Runs `work` to its end while forwarding progress reports to the client `peer` and turning
/// the request's cancellation (`cancelled`, by the client's `notifications/cancelled`), or
/// `stop` (the call must stop to ask its client), into the call's `cancel`. Reports queued
/// when the work ends are sent before it returns, so they reach the client before the result.
async fn drive<F: Future + ?Sized>(
    mut work: Pin<&mut F>,
    (peer, cancelled): (&Peer<RoleServer>, &CancellationToken),
    cancel: &CancellationToken,
    questions: Option<&McpCaller>,
    mut reports: Option<&mut UnboundedReceiver<ProgressNotificationParam>>,
) -> F::Output {
    let stopped = async {
        match questions.and_then(McpCaller::stopped) {
            Some(stop) => stop.cancelled().await,
            None => std::future::pending().await,
        }
    };
    let mut stopped = std::pin::pin!(stopped);
    let output = loop {
        let next_report = async {
            match reports.as_deref_mut() {
                Some(rx) => rx.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            out = &mut work => break out,
            () = cancelled.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
            () = &mut stopped, if !cancel.is_cancelled() => {
                // Let the call's other questions of this round be asked before it stops; a
                // call that ends meanwhile (a question from work it left running, a task)
                // is not stopped.
                for _ in 0..8 {
                    if let Some(out) = futures_util::FutureExt::now_or_never(work.as_mut()) {
                        return out;
                    }
                    tokio::task::yield_now().await;
                }
                if let Some(q) = questions {
                    q.mark_stopped();
                }
                cancel.cancel();
            }
            Some(param) = next_report => progress::send(peer, param).await,
        }
    };
    if let Some(rx) = reports {
        while let Ok(param) = rx.try_recv() {
            progress::send(peer, param).await;
        }
    }
    output
}

/// The error of a pending call whose result vanished (evicted before it was read).
fn gone(submitted: &ToolCallResult, handle: &str) -> ToolCallResult {
    let err = crate::ToolError::new(format!("the result of `{handle}` is no longer kept"))
        .with_code(crate::tools::error::codes::UNKNOWN_HANDLE);
    late(submitted, err)
}

/// The error of a pending call that did not finish in time for a client without tasks.
fn timed_out(submitted: &ToolCallResult, limit: Duration) -> ToolCallResult {
    tracing::warn!(
        tool = %submitted.tool_name,
        "pending result not ready within {} ms",
        limit.as_millis()
    );
    late(submitted, crate::calls::refusal::timed_out(limit))
}

/// A late error about a submitted call, finished like every result. The call was announced
/// when it was submitted, and the pending store announces its completion.
fn late(submitted: &ToolCallResult, err: crate::ToolError) -> ToolCallResult {
    let mut result = ToolCallResult::error(&submitted.tool_call_id, &submitted.tool_name, err);
    let rules = Rules {
        limit: crate::tools::error::DEFAULT_ERROR_MESSAGE_LIMIT,
        help_base: None,
    };
    finish(&mut result, rules, Announce::Silent);
    result
}

/// The protocol's error for a call that only runs as a task, from a client that did not
/// declare the tasks extension.
fn tasks_required() -> ErrorData {
    let tasks = (
        rmcp::model::TASKS_EXTENSION_ID.to_owned(),
        Default::default(),
    );
    let mut required = rmcp::model::ClientCapabilities::default();
    required.extensions = Some(rmcp::model::ExtensionCapabilities::from_iter([tasks]));
    ErrorData::missing_required_client_capability(required)
}

/// The span of a served `tools/call` in the OpenTelemetry MCP conventions, continuing the trace
/// the client sent in `_meta` (SEP-414); the call's `execute_tool` span is its child. Made only
/// when spans are exported ([`crate::telemetry`]).
fn served_span(call: &ToolCall, context: &RequestContext<RoleServer>) -> tracing::Span {
    if !crate::telemetry::enabled() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "mcp_request",
        otel.name = %format_args!("tools/call {}", call.name),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.tool.name = call.name.as_str(),
        jsonrpc.request.id = call.id.as_str(),
    );
    if let Some(parent) = context.meta.get_traceparent() {
        crate::telemetry::continue_trace(&span, parent);
    }
    span
}

/// The id of the call a `tools/call` request makes: `mcp-` and the request's id, written
/// straight into the shared string (one allocation, no formatting machinery: it runs for every
/// call).
fn call_id(id: &rmcp::model::RequestId) -> ArcStr {
    const PREFIX: &str = "mcp-";
    let mut digits = itoa::Buffer::new();
    let id: &str = match id {
        rmcp::model::NumberOrString::Number(n) => digits.format(*n),
        rmcp::model::NumberOrString::String(s) => s,
    };
    ArcStr::init_with(PREFIX.len() + id.len(), |out| {
        let (head, tail) = out.split_at_mut(PREFIX.len());
        head.copy_from_slice(PREFIX.as_bytes());
        tail.copy_from_slice(id.as_bytes());
    })
    // Both parts are UTF-8, so this is never taken.
    .unwrap_or_else(|_| ArcStr::from(format!("{PREFIX}{id}")))
}

/// Hashes `value` with every object's keys in sorted order: the same arguments give the same
/// hash whatever order the client wrote them in. Nothing is copied.
fn hash_canonical(value: &Value, hasher: &mut impl std::hash::Hasher) {
    use std::hash::Hash;
    match value {
        Value::Object(map) => {
            // The entries in key order, each value taken with its key (not looked up again).
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by_key(|(k, _)| *k);
            b'{'.hash(hasher);
            for (k, v) in entries {
                k.hash(hasher);
                hash_canonical(v, hasher);
            }
            b'}'.hash(hasher);
        }
        Value::Array(items) => {
            b'['.hash(hasher);
            for item in items {
                hash_canonical(item, hasher);
            }
            b']'.hash(hasher);
        }
        Value::String(s) => {
            b's'.hash(hasher);
            s.hash(hasher);
        }
        Value::Number(n) => {
            b'n'.hash(hasher);
            n.to_string().hash(hasher);
        }
        Value::Bool(b) => b.hash(hasher),
        Value::Null => b'0'.hash(hasher),
    }
}

#[cfg(test)]
mod tests {
    use std::hash::Hasher;

    use rmcp::model::NumberOrString;
    use serde_json::{Value, json};

    use super::{call_id, hash_canonical};

    fn hashed(value: &Value) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        hash_canonical(value, &mut hasher);
        hasher.finish()
    }

    #[test]
    fn the_arguments_hash_ignores_key_order_and_tells_values_apart() {
        let value = json!({"b": 1, "a": [true, {"y": 1.5, "x": "é"}], "c": {"only": null}});
        let reordered = serde_json::from_str::<Value>(
            r#"{"c": {"only": null}, "a": [true, {"x": "é", "y": 1.5}], "b": 1}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(hashed(&reordered), hashed(&value));
        assert_ne!(
            hashed(&json!({"text": "hi"})),
            hashed(&json!({"text": "ho"}))
        );
    }

    #[test]
    fn a_calls_id_is_mcp_and_the_requests_id_as_format_would_write_it() {
        for id in [
            NumberOrString::Number(0),
            NumberOrString::Number(7),
            NumberOrString::Number(i64::MAX),
            NumberOrString::Number(i64::MIN),
            NumberOrString::String("".into()),
            NumberOrString::String("req-é/7".into()),
        ] {
            assert_eq!(call_id(&id), format!("mcp-{id}"));
        }
    }
}
