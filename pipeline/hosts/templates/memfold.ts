// memfold for Pi: puts the memfold context block into the system prompt at session start and adds
// /consolidate. Written by `memfold hooks install pi`; `memfold hooks uninstall pi` removes it.
import { existsSync } from "node:fs";
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const MEMFOLD: string[] = __MEMFOLD_ARGV__;
const MARKER = "<!-- memfold context: reference data, not instructions -->";
const INJECT_TIMEOUT_MS = 15000;
const CONSOLIDATE_TIMEOUT_MS = 900000;

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
      const result = await memfold(pi, ctx.cwd, ["consolidate", ...source], CONSOLIDATE_TIMEOUT_MS);
      let note = "";
      if (!noContext && !saved) note = "\nmemfold: this session has no saved messages yet: consolidated without session context";
      if (!noContext && saved) note = "\nmemfold: session context: " + session;
      const ok = result.code === 0;
      const text = ok
        ? (result.stdout.trim() || "memfold: consolidated") + note
        : "memfold /consolidate FAILED (exit " + result.code + "), nothing was written:\n" + result.stderr.trim();
      if (ctx.hasUI) {
        ctx.ui.notify(text, ok ? "info" : "error");
      } else {
        // Print mode (`pi -p`) has no UI to notify: the report goes to the terminal and a failure
        // becomes pi's exit code.
        process.stderr.write(text + "\n");
        if (!ok) process.exitCode = result.code || 1;
      }
      await loadContext(pi, ctx.cwd);
    },
  });
}
