//! Finding a capability through wrapper layers, outermost first.

use super::{
    ElicitationSupport, Instructions, Lifecycle, MAX_WRAPPER_DEPTH, OAuthTokenSource,
    PublicDescription, ToolListChanges,
};
use crate::toolset::ToolSet;

/// Finds a capability on `set` or on any toolset it wraps, outermost first.
///
/// `get` reads the capability off one layer, e.g. `|s| s.lifecycle()`.
pub fn find_capability<'a, C: ?Sized + 'a>(
    set: &'a dyn ToolSet,
    get: impl Fn(&'a dyn ToolSet) -> Option<&'a C>,
) -> Option<&'a C> {
    let mut layer = set;
    for _ in 0..MAX_WRAPPER_DEPTH {
        if let Some(found) = get(layer) {
            return Some(found);
        }
        layer = layer.inner()?;
    }
    None
}

/// The outermost [`Lifecycle`] in the wrapper chain.
pub fn find_lifecycle(set: &dyn ToolSet) -> Option<&dyn Lifecycle> {
    find_capability(set, |s| s.lifecycle())
}

/// The outermost [`Instructions`] in the wrapper chain.
pub fn find_instructions(set: &dyn ToolSet) -> Option<&dyn Instructions> {
    find_capability(set, |s| s.instructions())
}

/// The outermost [`PublicDescription`] in the wrapper chain.
pub fn find_public_description(set: &dyn ToolSet) -> Option<&dyn PublicDescription> {
    find_capability(set, |s| s.public_description())
}

/// The outermost [`ToolListChanges`] in the wrapper chain.
pub fn find_tool_list_changes(set: &dyn ToolSet) -> Option<&dyn ToolListChanges> {
    find_capability(set, |s| s.tool_list_changes())
}

/// The outermost [`ElicitationSupport`] in the wrapper chain.
pub fn find_elicitation(set: &dyn ToolSet) -> Option<&dyn ElicitationSupport> {
    find_capability(set, |s| s.elicitation())
}

/// The outermost [`OAuthTokenSource`] in the wrapper chain.
pub fn find_oauth(set: &dyn ToolSet) -> Option<&dyn OAuthTokenSource> {
    find_capability(set, |s| s.oauth())
}
