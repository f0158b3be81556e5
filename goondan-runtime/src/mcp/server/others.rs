//! The MCP methods that are not about tools, served by a handler of the user's own:
//! resources, prompts and completion. Tools stay ours (every call through the executor);
//! a program that also needs resources or prompts writes them with rmcp and hands the
//! handler to [`McpServerBuilder::others`](super::McpServerBuilder::others).
//!
//! rmcp's `ServerHandler` returns `impl Future`, so it cannot be a trait object; [`Others`]
//! is the object-safe slice of it that the server keeps, implemented for every handler.

#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};

type Answer<'a, T> = Pin<Box<dyn Future<Output = Result<T, ErrorData>> + Send + 'a>>;

/// The non-tool methods of a user's rmcp handler.
pub(super) trait Others: Send + Sync + 'static {
    /// What the handler announces: its resources, prompts and completions capabilities.
    fn capabilities(&self) -> ServerCapabilities;
    fn complete(
        &self,
        r: CompleteRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult>;
    fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse>;
    fn list_prompts(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult>;
    fn list_resources(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse>;
    fn subscribe(&self, r: SubscribeRequestParams, c: RequestContext<RoleServer>)
    -> Answer<'_, ()>;
    fn unsubscribe(
        &self,
        r: UnsubscribeRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
}

impl<H: ServerHandler> Others for H {
    fn capabilities(&self) -> ServerCapabilities {
        self.get_info().capabilities
    }
    fn complete(
        &self,
        r: CompleteRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, r, c))
    }
    fn get_prompt(
        &self,
        r: GetPromptRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, r, c))
    }
    fn list_prompts(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, r, c))
    }
    fn list_resources(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, r, c))
    }
    fn list_resource_templates(
        &self,
        r: Option<PaginatedRequestParams>,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(self, r, c))
    }
    fn read_resource(
        &self,
        r: ReadResourceRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, r, c))
    }
    fn subscribe(
        &self,
        r: SubscribeRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::subscribe(self, r, c))
    }
    fn unsubscribe(
        &self,
        r: UnsubscribeRequestParams,
        c: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::unsubscribe(self, r, c))
    }
}
