// pi-forwarding-driver.mjs runs the forwarding code of the published
// pi-permission-system (20.7.3, installed from npm by `make interop-pi-deps`)
// against a mailbox root, for integration/interop's pi tests. It is
// courier's own glue: every file it writes or reads in the mailbox is
// written or read by pi's modules, which it imports from the installed
// package's src/ (TypeScript, so it runs under the pinned tsx).
//
//   tsx pi-forwarding-driver.mjs child  --pkg DIR --root R --session S --agent A --bash CMD --logs DIR
//   tsx pi-forwarding-driver.mjs child  --pkg DIR --root R --session S --agent A --read PATH --logs DIR
//   tsx pi-forwarding-driver.mjs parent --pkg DIR --root R --session P --answer approve|deny|session|reason:TEXT --count N --logs DIR
//
// child: pi's tool gate for one bash call whose check is "ask" (pi's own
// default for bash, `"*": "ask"`), or pi's external-directory gate for one
// `read` of a path outside the working directory (the driver's cwd) whose
// check is "ask" (pi's default for external_directory), escalated through
// pi's authorizer selection: a no-UI subagent session (the hint and parent come from the
// environment, PI_IS_SUBAGENT and PI_SUBAGENT_PARENT_SESSION, as pi reads
// them) gets pi's ParentAuthorizer, which writes the request into
// R/sessions/<parent>/requests/ and polls for the response. Prints one JSON
// object: the gate's outcome (allow, or block with the reason pi gives the
// agent) and the decision pi's authorizer returned.
//
// parent: pi's ForwardingManager (the 250 ms tick) and
// ForwardedRequestServer serve session P: each request is escalated (the
// stubbed policy says "ask", as a 20.7.3 parent's does for a request it has
// no rule for) to pi's LocalUserAuthorizer, whose dialog is pi's
// requestPermissionDecisionFromUi on a stub UI that picks the --answer.
// Prints one JSON line per dialog shown (title, message, options), then
// exits 0 after --count requests were answered.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

function parseArgs(argv) {
  const [mode, ...rest] = argv;
  const opts = { mode };
  for (let i = 0; i < rest.length; i += 2) {
    const key = rest[i];
    if (!key.startsWith("--") || i + 1 >= rest.length) {
      throw new Error(`usage: flag ${key} needs a value`);
    }
    opts[key.slice(2)] = rest[i + 1];
  }
  for (const required of ["pkg", "root", "session", "logs"]) {
    if (!opts[required]) throw new Error(`usage: --${required} is required`);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));

// pi's modules, from the installed package (never copied).
async function pi(rel) {
  return import(pathToFileURL(join(opts.pkg, "src", rel)).href);
}

const { PermissionSessionLogger } = await pi("session-logger.ts");
const { DEFAULT_EXTENSION_CONFIG } = await pi("extension-config.ts");
const { AuthorizerSelection } = await pi("authority/authorizer-selection.ts");
const { PermissionPrompter } = await pi("authority/permission-prompter.ts");
const { SubagentDetection } = await pi("authority/subagent-detection.ts");
const { posixPathFlavor } = await pi("path/path-flavor.ts");
const { requestPermissionDecisionFromUi } = await pi("authority/permission-dialog.ts");

const logger = new PermissionSessionLogger({
  globalLogsDir: opts.logs,
  getConfig: () => ({ ...DEFAULT_EXTENSION_CONFIG, debugLog: true }),
  notify: (message) => process.stderr.write(`pi notify: ${message}\n`),
});

// No listeners: pi's broadcasts are best-effort.
const events = { emit() {}, on: () => () => {} };

// The session a pi extension is handed (ctx): only the readers the
// forwarding code uses. The agent name is what pi-agent-router records.
function context(hasUI, ui) {
  const agent = opts.agent ?? "Explore";
  return {
    hasUI,
    mode: "rpc",
    ui,
    sessionManager: {
      getSessionId: () => opts.session,
      getSessionDir: () => join(opts.logs, "session"),
      getEntries: () => [{ type: "custom", customType: "active_agent", data: { name: agent } }],
    },
  };
}

function selection(ctx) {
  const s = new AuthorizerSelection({
    detection: new SubagentDetection({
      subagentSessionsDir: join(opts.logs, "subagent-sessions"),
      flavor: posixPathFlavor,
    }),
    events,
    getPromptPreferences: () => ({ doublePressToConfirm: true }),
    // pi's requestPermissionDecision outside the TUI (its "tui" branch
    // draws pi-tui's inline dialog, which needs the peer packages).
    requestPermissionDecision: (view, title, message, options) =>
      requestPermissionDecisionFromUi(view.ui, title, message, options),
    forwardingDir: opts.root,
    logger,
    prompter: new PermissionPrompter({ logger }),
  });
  s.activate(ctx);
  return s;
}

async function child() {
  if (!opts.bash === !opts.read) throw new Error("usage: child needs --bash CMD or --read PATH");
  const { GateRunner } = await pi("handlers/gates/runner.ts");
  const { describeToolGate } = await pi("handlers/gates/tool.ts");
  const { ToolPreviewFormatter } = await pi("tool-preview-formatter.ts");
  const { GateDecisionReporter } = await pi("decision-reporter.ts");
  const { describeExternalDirectoryGate } = await pi("handlers/gates/external-directory.ts");
  const { PathNormalizer } = await pi("path-normalizer.ts");

  const ctx = context(false, undefined);
  const escalator = selection(ctx);
  let decision = null;
  const recording = {
    escalate: async (details) => {
      decision = await escalator.escalate(details);
      return decision;
    },
  };
  // What pi's resolver gives the call under its default policy.
  const check = opts.bash
    ? { toolName: "bash", state: "ask", source: "bash", origin: "builtin", command: opts.bash, matchedPattern: "*" }
    : { toolName: "external_directory", state: "ask", source: "special", origin: "builtin" };
  const resolver = { resolve: () => check };
  const recorder = { recordSessionApproval() {} };
  const reporter = new GateDecisionReporter(logger, events);
  const formatter = new ToolPreviewFormatter({
    toolInputPreviewMaxLength: 200,
    toolTextSummaryMaxLength: 80,
    toolInputLogPreviewMaxLength: 1000,
  });
  const toolCallId = "toolu_interop_1";
  const tcc = {
    toolName: opts.bash ? "bash" : "read",
    agentName: opts.agent ?? "Explore",
    input: opts.bash ? { command: opts.bash } : { path: opts.read },
    toolCallId,
    cwd: process.cwd(),
  };
  const descriptor = opts.bash
    ? describeToolGate(tcc, check, formatter)
    : describeExternalDirectoryGate(tcc, [], resolver, new PathNormalizer(posixPathFlavor, tcc.cwd));
  if (!descriptor || descriptor.action === "allow") {
    throw new Error(`pi's gate does not apply to ${JSON.stringify(tcc.input)}: ${JSON.stringify(descriptor)}`);
  }
  const outcome = await new GateRunner(resolver, recorder, recording, reporter).run(
    descriptor,
    tcc.agentName,
    toolCallId,
  );
  process.stdout.write(`${JSON.stringify({ outcome, decision })}\n`);
}

async function parent() {
  const { ForwardedRequestServer } = await pi("authority/forwarded-request-server.ts");
  const { ForwardingManager } = await pi("authority/forwarding-manager.ts");
  const answer = opts.answer ?? "approve";
  const count = Number(opts.count ?? "1");

  // The human at pi's dialog, answering as --answer says.
  const ui = {
    async select(title, options) {
      process.stdout.write(`${JSON.stringify({ dialog: title, options })}\n`);
      if (answer === "approve") return "Yes";
      if (answer === "deny") return "No";
      // "for this session", then (when pi offers the scope choice) the
      // whole serving session: the second option of either select.
      if (answer === "session") return options[1];
      return "No, provide reason";
    },
    async input() {
      return answer.startsWith("reason:") ? answer.slice("reason:".length) : undefined;
    },
  };
  const ctx = context(true, ui);
  const dialogs = selection(ctx);
  let answered = 0;
  const server = new ForwardedRequestServer({
    forwardingDir: opts.root,
    logger,
    // A 20.7.3 parent's policy for a request it has no rule for.
    policy: { check: () => ({ state: "ask", toolName: "bash", source: "default", origin: "builtin" }) },
    escalator: {
      escalate: async (details) => {
        const decision = await dialogs.escalate(details);
        answered++;
        return decision;
      },
    },
    recorder: { recordSessionApproval() {} },
  });
  const detection = new SubagentDetection({
    subagentSessionsDir: join(opts.logs, "subagent-sessions"),
    flavor: posixPathFlavor,
  });
  let finished;
  const done = new Promise((resolve) => {
    finished = resolve;
  });
  // pi's server writes each response before processInbox resolves, so the
  // count is checked after a whole drain.
  const manager = new ForwardingManager(detection, {
    async processInbox(c) {
      await server.processInbox(c);
      if (answered >= count) finished();
    },
  });
  manager.start(ctx);
  process.on("SIGTERM", () => {
    manager.stop();
    process.exit(0);
  });
  await done;
  manager.stop();
}

if (opts.mode === "child") await child();
else if (opts.mode === "parent") await parent();
else throw new Error(`usage: mode ${opts.mode}: want child or parent`);
