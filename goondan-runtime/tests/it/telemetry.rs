//! The W3C trace context of `goondan_runtime::telemetry`: what a request to another process
//! carries, and what the receiving span does with what it gets (any text can arrive).

use goondan_runtime::telemetry::{Telemetry, continue_trace, traceparent};
use tracing_subscriber::layer::SubscriberExt;

const SENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The trace id part of a `traceparent`.
fn trace_of(context: &str) -> &str {
    context.split('-').nth(1).unwrap()
}

// Multi-threaded: the receiver answers while this thread waits for the last export.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_span_continues_a_received_trace_and_starts_its_own_for_anything_else() {
    let receiver = goondan_test_peers::otlp::OtlpReceiver::start().await;
    let telemetry = Telemetry::builder()
        .endpoint(receiver.endpoint())
        .build()
        .unwrap();
    // Without an exported span there is nothing to send.
    assert_eq!(traceparent(), None);
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let (continued, others) = tracing::subscriber::with_default(subscriber, || {
        let served = tracing::info_span!("served");
        continue_trace(&served, SENT);
        let continued = served.in_scope(traceparent).unwrap();
        let huge = format!("00-{}-00f067aa0ba902b7-01", "a".repeat(1 << 20));
        let others: Vec<String> = [
            "",
            "garbage",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01\u{0}",
            huge.as_str(),
        ]
        .iter()
        .map(|bad| {
            let span = tracing::info_span!("served");
            continue_trace(&span, bad);
            span.in_scope(traceparent).unwrap()
        })
        .collect();
        (continued, others)
    });
    // The same trace, a span of its own (the sender's span is its parent).
    assert_eq!(trace_of(&continued), trace_of(SENT));
    assert_ne!(continued, SENT);
    assert!(
        continued.starts_with("00-") && continued.len() == SENT.len(),
        "{continued}"
    );
    for other in &others {
        assert_ne!(trace_of(other), trace_of(SENT), "{other}");
        assert_eq!(
            other.len(),
            SENT.len(),
            "a valid context of a new trace: {other}"
        );
    }
    // What was exported says the same: the served span's parent is the sender's span.
    telemetry.shutdown();
    let spans = receiver.spans();
    let served: Vec<_> = spans
        .iter()
        .filter(|s| s.trace_id == trace_of(SENT))
        .collect();
    assert_eq!(served.len(), 1, "{spans:#?}");
    assert_eq!(served[0].parent_span_id, "00f067aa0ba902b7");
    assert_eq!(spans.len(), 1 + others.len());
}

/// A request and a one-way event from the host continue the host's trace in the agent that
/// handles them: the worker's span is in it (`traceparent` in the IPC payload). The agents run
/// in-process, on this test's thread, so this thread's subscriber sees both ends.
#[tokio::test(flavor = "current_thread")]
async fn a_request_and_a_one_way_event_continue_the_sender_s_trace_in_the_agent() {
    use goondan_runtime::agents::orchestrator::{
        Orchestrator, OrchestratorConfig, SwarmSpec, worker_fn,
    };
    use goondan_runtime::tools::agent::{AgentEvent, AgentRuntime, RequestOptions};
    use tracing::Instrument;

    let receiver = goondan_test_peers::otlp::OtlpReceiver::start().await;
    let telemetry = Telemetry::builder()
        .endpoint(receiver.endpoint())
        .build()
        .unwrap();
    let _exporting =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(telemetry.layer()));
    let (seen_tx, mut seen) = tokio::sync::mpsc::unbounded_channel::<Option<String>>();
    let swarm = SwarmSpec::new("traced", "worker").agent("worker");
    let orch = Orchestrator::in_process(swarm, OrchestratorConfig::default(), move |_| {
        let seen = seen_tx.clone();
        worker_fn(move |_event, _ctx| {
            let seen = seen.clone();
            async move {
                let _ = seen.send(traceparent());
                Ok(serde_json::json!("done"))
            }
        })
    })
    .unwrap();

    let host = tracing::info_span!("host");
    let context = host.in_scope(traceparent).unwrap();
    let event = || AgentEvent::new("agent.request", serde_json::json!("hi"));
    orch.request("worker", event(), RequestOptions::default())
        .instrument(host.clone())
        .await
        .unwrap();
    let in_request = seen
        .recv()
        .await
        .unwrap()
        .expect("the agent's span is exported");
    assert_eq!(trace_of(&in_request), trace_of(&context));
    assert_ne!(in_request, context, "a span of its own");

    orch.send("worker", event()).instrument(host).await.unwrap();
    let in_event = seen
        .recv()
        .await
        .unwrap()
        .expect("the agent's span is exported");
    assert_eq!(trace_of(&in_event), trace_of(&context));

    // Sent from no span, an event starts a trace of its own.
    orch.send("worker", event()).await.unwrap();
    let alone = seen
        .recv()
        .await
        .unwrap()
        .expect("the agent's span is exported");
    assert_ne!(trace_of(&alone), trace_of(&context));
    orch.shutdown(std::time::Duration::from_secs(2)).await;
}
