// memfold for Pi: puts the memfold context block into the system prompt at session start and adds
// /consolidate. Written by `memfold hooks install pi`; `memfold hooks uninstall pi` removes it.
// With a UI, /consolidate runs in the background and shows its progress and its end on the status line.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const MEMFOLD: string[] = __MEMFOLD_ARGV__;
const MARKER = "<!-- memfold context: reference data, not instructions -->";
const INJECT_TIMEOUT_MS = 15000;
const CONSOLIDATE_TIMEOUT_MS = 900000;
const STATUS_KEY = "memfold";
const STATUS_KEEP_MS = 30000;
// What each stage of `memfold consolidate --progress-json` is called on the status line.
const STAGES = {
  started: "waiting for the project lock", recover: "recovering", read: "reading the store",
  snapshot: "reading the session", manifest: "selecting memories", worker: "planning",
  validation: "validating the plan", "stale-check": "checking for changes", index: "building the indexes",
  "post-verify": "verifying the result", commit: "committing",
};

let running = false;

let memfoldContext = "";

async function memfold(pi: ExtensionAPI, cwd: string, args: string[], timeout: number) {
  return await pi.exec(MEMFOLD[0], [...MEMFOLD.slice(1), "--project", cwd, ...args], { cwd, timeout });
}

// Fails open: a broken or missing store must never stop a session from starting.
async function loadContext(pi: ExtensionAPI, cwd: string) {
  try {
    const result = await memfold(pi, cwd, ["inject"], INJECT_TIMEOUT_MS);
    memfoldContext = result.code === 0 ? result.stdout.trim() : "";
  } catch {
    memfoldContext = "";
  }
}

// The background run: progress lines from stderr go to the status line, the result to a notification
// and, briefly, to the status line; a second /consolidate while one runs is refused, not queued.
function consolidateInBackground(pi: ExtensionAPI, ctx, source: string[], note: string) {
  const args = [...MEMFOLD.slice(1), "--project", ctx.cwd, "--json", "consolidate", ...source, "--progress-json"];
  running = true;
  ctx.ui.setStatus(STATUS_KEY, "memfold: consolidating (starting)");
  ctx.ui.notify("memfold: consolidating in the background; the status line shows its progress" + note, "info");
  const child = spawn(MEMFOLD[0], args, { cwd: ctx.cwd, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let pending = "";
  let errors = "";
  const timer = setTimeout(() => child.kill("SIGTERM"), CONSOLIDATE_TIMEOUT_MS);
  child.stdout.on("data", (chunk) => { out += chunk.toString("utf8"); });
  child.stderr.on("data", (chunk) => {
    pending += chunk.toString("utf8");
    const lines = pending.split("\n");
    pending = lines.pop() || "";
    for (const line of lines) {
      let stage = "";
      try { stage = JSON.parse(line).stage || ""; } catch { errors += line + "\n"; continue; }
      const label = STAGES[stage.split(":")[0]];
      if (label) ctx.ui.setStatus(STATUS_KEY, "memfold: consolidating (" + label + ")");
    }
  });
  const finish = async (code: number) => {
    clearTimeout(timer);
    running = false;
    let result = {};
    try { result = JSON.parse(out); } catch { result = {}; }
    const ok = code === 0 && result.ok !== false;
    const done = ok
      ? "memfold: consolidated (" + (result.memories ? result.memories.before + " -> " + result.memories.after
        + " memories" : "verified") + ")"
      : "memfold: consolidation FAILED (exit " + code + (result.code ? ", " + result.code : "") + ")";
    ctx.ui.setStatus(STATUS_KEY, done);
    const detail = ok ? (result.receipt ? "\nreceipt: " + result.receipt : "")
      : "\n" + (result.message || errors.trim()) + (result.hint ? "\nhint: " + result.hint : "");
    ctx.ui.notify(done + detail, ok ? "info" : "error");
    setTimeout(() => ctx.ui.setStatus(STATUS_KEY, undefined), STATUS_KEEP_MS);
    await loadContext(pi, ctx.cwd);
  };
  child.on("error", (err) => { errors += String(err) + "\n"; });
  child.on("close", (code) => { void finish(code === null ? 1 : code); });
}

export default function (pi: ExtensionAPI) {
  pi.on("session_start", async (_event, ctx) => {
    await loadContext(pi, ctx.cwd);
    if (!memfoldContext) return undefined;
    return { systemPromptAppend: MARKER + "\n" + memfoldContext };
  });

  // Pi versions that ignore session_start results get the block here, once per prompt, unless present.
  pi.on("before_agent_start", async (event, _ctx) => {
    const prompt = event.systemPrompt || "";
    if (!memfoldContext || prompt.includes(MARKER)) return undefined;
    return { systemPrompt: prompt + "\n\n" + MARKER + "\n" + memfoldContext };
  });

  pi.registerCommand("consolidate", {
    description: "Consolidate memfold memory with this session (/consolidate no-context leaves it out)",
    handler: async (args, ctx) => {
      const noContext = (args || "").trim() === "no-context";
      // Pi writes the session file with the first answer: before that the session has nothing to read.
      const session = ctx.sessionManager.getSessionFile() || "";
      const saved = session !== "" && existsSync(session);
      const source = noContext || !saved ? ["--no-context"] : ["--context", session];
      let note = "";
      if (!noContext && !saved) note = "\nmemfold: this session has no saved messages yet: consolidated without session context";
      if (!noContext && saved) note = "\nmemfold: session context: " + session;
      if (ctx.hasUI) {
        if (running) {
          ctx.ui.notify("memfold: a consolidation is already running; see the status line", "warning");
          return;
        }
        consolidateInBackground(pi, ctx, source, note);
        return;
      }
      // Print mode (`pi -p`) ends with the command: the run happens now, in the foreground.
      const result = await memfold(pi, ctx.cwd, ["consolidate", ...source], CONSOLIDATE_TIMEOUT_MS);
      const ok = result.code === 0;
      const text = ok
        ? (result.stdout.trim() || "memfold: consolidated") + note
        : "memfold /consolidate FAILED (exit " + result.code + "), nothing was written:\n" + result.stderr.trim();
      // No UI to notify: the report goes to the terminal and a failure becomes pi's exit code.
      process.stderr.write(text + "\n");
      if (!ok) process.exitCode = result.code || 1;
      await loadContext(pi, ctx.cwd);
    },
  });
}
