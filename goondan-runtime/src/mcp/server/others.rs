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

/// Declares [`Others`] with the listed methods of rmcp's `ServerHandler`, each answering a
/// boxed future, and implements it for every handler by calling the handler's own method.
macro_rules! others {
    ($($method:ident($request:ty) -> $answer:ty;)*) => {
        /// The non-tool methods of a user's rmcp handler.
        pub(super) trait Others: Send + Sync + 'static {
            /// What the handler announces: its resources, prompts and completions capabilities.
            fn capabilities(&self) -> ServerCapabilities;
            $(
                fn $method(&self, r: $request, c: RequestContext<RoleServer>)
                    -> Answer<'_, $answer>;
            )*
        }

        impl<H: ServerHandler> Others for H {
            fn capabilities(&self) -> ServerCapabilities {
                self.get_info().capabilities
            }
            $(
                fn $method(&self, r: $request, c: RequestContext<RoleServer>)
                    -> Answer<'_, $answer> {
                    Box::pin(ServerHandler::$method(self, r, c))
                }
            )*
        }
    };
}

others! {
    complete(CompleteRequestParams) -> CompleteResult;
    get_prompt(GetPromptRequestParams) -> GetPromptResponse;
    list_prompts(Option<PaginatedRequestParams>) -> ListPromptsResult;
    list_resources(Option<PaginatedRequestParams>) -> ListResourcesResult;
    list_resource_templates(Option<PaginatedRequestParams>) -> ListResourceTemplatesResult;
    read_resource(ReadResourceRequestParams) -> ReadResourceResponse;
    subscribe(SubscribeRequestParams) -> ();
    unsubscribe(UnsubscribeRequestParams) -> ();
}
