// The JS SDK (@langchain/langgraph-sdk 2.x, from npm) against graphrun serve: a thread, a
// resumable streamed run that interrupts, a rejoin by Last-Event-ID, the resume, search by
// status, history. Prints one JSON line for tests/e2e/test_api_server.py to check.
import { Client } from "@langchain/langgraph-sdk";

const client = new Client({ apiUrl: process.argv[2] });
const thread = await client.threads.create({ metadata: { sdk: "js" } });
const events = [];
const parts = [];
let runId = null;
for await (const part of client.runs.stream(thread.thread_id, "api_approval", {
  input: { topic: "js" },
  streamMode: ["values", "updates"],
  streamResumable: true,
})) {
  events.push(part.event);
  if (part.event === "metadata") runId = part.data.run_id;
  else parts.push({ event: part.event, data: part.data, id: part.id });
}
// rejoin after the first event: the rest, none twice
const tail = parts.slice(1).map((p) => p.event);
const rejoined = [];
for await (const part of client.runs.joinStream(thread.thread_id, runId, {
  lastEventId: parts[0].id,
})) {
  if (part.event !== "metadata") rejoined.push(part.event);
}
const interrupted = await client.threads.get(thread.thread_id);
const found = await client.threads.search({ status: "interrupted", metadata: { sdk: "js" } });
const resumed = await client.runs.wait(thread.thread_id, "api_approval", {
  command: { resume: "yes" },
});
const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
// Agent Chat UI's stop button: cancel the run under way
const other = await client.threads.create();
const slow = await client.runs.create(other.thread_id, "api_slow", { input: { topic: "1" } });
await client.runs.cancel(other.thread_id, slow.run_id, true);
const stopped = await client.runs.get(other.thread_id, slow.run_id);
console.log(
  JSON.stringify({
    events,
    tail,
    rejoined,
    interrupted: { status: interrupted.status, interrupts: interrupted.interrupts },
    found: found.length,
    resumed,
    history: history.length,
    stopped: stopped.status,
  })
);
