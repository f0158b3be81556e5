use goondan_runtime::prelude::*;

#[tool(name = "jobs")]
pub mod jobs {
    use super::*;

    pub fn start(seconds: u64) -> Pending {
        Pending::new(async move { Ok::<_, ToolError>(seconds) })
    }

    pub async fn try_start(seconds: u64) -> Result<Pending, ToolError> {
        if seconds == 0 {
            return Err(ToolError::new("give a positive number of seconds"));
        }
        Ok(Pending::new(async move { Ok::<_, ToolError>(seconds) }))
    }
}

fn main() {
    assert_eq!(jobs::TOOL.build().unwrap().exports().len(), 2);
}
