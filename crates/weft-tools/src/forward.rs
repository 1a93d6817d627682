//! [`ToolSet`] for `Arc<T>` and `Box<T>` (including `Arc<dyn ToolSet>`), so
//! shared toolsets can be wrapped. These forward every method, capabilities
//! included: a smart pointer is not a wrapper layer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use async_trait::async_trait;
use weft_core::tool::{ToolError, ToolRequest, ToolSpec};

use crate::capability::{
    ElicitationSupport, Instructions, Lifecycle, OAuthTokenSource, PublicDescription,
    ToolListChanges,
};
use crate::toolset::{ToolFailure, ToolReply, ToolSet};

/// The future an `#[async_trait]` method returns.
type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

macro_rules! forward_toolset {
    ($ptr:ident) => {
        #[async_trait]
        impl<T: ToolSet + ?Sized> ToolSet for $ptr<T> {
            fn name(&self) -> &str {
                (**self).name()
            }

            // The two async methods hand back the pointee's own boxed
            // future: an `async fn` here would box a second future around it
            // on every call.
            fn list_tools<'life0, 'async_trait>(
                &'life0 self,
            ) -> BoxFuture<'async_trait, Result<Vec<ToolSpec>, ToolError>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).list_tools()
            }

            fn call_tool<'life0, 'async_trait>(
                &'life0 self,
                request: ToolRequest,
            ) -> BoxFuture<'async_trait, Result<ToolReply, ToolFailure>>
            where
                'life0: 'async_trait,
                Self: 'async_trait,
            {
                (**self).call_tool(request)
            }

            fn inner(&self) -> Option<&dyn ToolSet> {
                (**self).inner()
            }

            fn lifecycle(&self) -> Option<&dyn Lifecycle> {
                (**self).lifecycle()
            }

            fn instructions(&self) -> Option<&dyn Instructions> {
                (**self).instructions()
            }

            fn public_description(&self) -> Option<&dyn PublicDescription> {
                (**self).public_description()
            }

            fn tool_list_changes(&self) -> Option<&dyn ToolListChanges> {
                (**self).tool_list_changes()
            }

            fn elicitation(&self) -> Option<&dyn ElicitationSupport> {
                (**self).elicitation()
            }

            fn oauth(&self) -> Option<&dyn OAuthTokenSource> {
                (**self).oauth()
            }
        }
    };
}

forward_toolset!(Arc);
forward_toolset!(Box);

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;

    use super::*;
    use crate::capability::find_instructions;
    use crate::startable::StartableToolSet;
    use crate::typed::FnToolSet;

    #[derive(Deserialize, JsonSchema)]
    struct NoArgs {}

    #[tokio::test]
    async fn shared_toolsets_can_be_wrapped_and_keep_their_capabilities() {
        let shared: Arc<dyn ToolSet> = Arc::new(
            FnToolSet::new("x")
                .tool("t", "T", |_: NoArgs| async move { Ok::<_, ToolError>(1) })
                .with_instructions("hi"),
        );
        let wrapped = StartableToolSet::new(Arc::clone(&shared));
        assert_eq!(wrapped.name(), "x");
        assert_eq!(wrapped.list_tools().await.unwrap().len(), 1);
        assert_eq!(
            find_instructions(&wrapped).unwrap().instructions_text(),
            "hi"
        );
        let boxed: Box<dyn ToolSet> = Box::new(wrapped);
        assert!(find_instructions(&boxed).is_some());
        assert!(boxed.lifecycle().is_some());
    }
}
