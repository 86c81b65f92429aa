// crab's web chat: talks to crab's own API with fetch only (an EventSource cannot send the
// bearer token), reads each turn's Server-Sent Events from the response body, and renders
// Markdown with a small renderer that escapes every character of HTML first.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem("crab-token") || "", session: null, busy: false };

// --- Markdown: escape first, then add only our own tags -------------------------------------
function escapeHtml(text) {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

function inline(text) {
  // text is already escaped: these patterns only ever see entities, never raw markup
  const codes = [];
  text = text.replace(/`([^`\n]+)`/g, (_, code) => `\u0000${codes.push(code) - 1}\u0000`);
  text = text
    .replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>")
    .replace(/(^|[^*])\*([^*\n]+)\*/g, "$1<em>$2</em>")
    .replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)"]+)\)/g, '<a href="$2" rel="noopener noreferrer" target="_blank">$1</a>');
  return text.replace(/\u0000(\d+)\u0000/g, (_, i) => `<code>${codes[Number(i)]}</code>`);
}

function markdown(source) {
  const lines = escapeHtml(source).split("\n");
  const out = [];
  let list = null;
  let para = [];
  const flush = () => {
    if (para.length) out.push(`<p>${inline(para.join("<br>"))}</p>`);
    para = [];
    if (list) out.push(`</${list}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^```\s*([\w+-]*)\s*$/);
    if (fence) {
      flush();
      const body = [];
      for (i++; i < lines.length && !/^```\s*$/.test(lines[i]); i++) body.push(lines[i]);
      out.push(`<pre><code>${body.join("\n")}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*]|(\d+)\.)\s+(.*)$/);
    if (heading) {
      flush();
      out.push(`<h${heading[1].length}>${inline(heading[2])}</h${heading[1].length}>`);
    } else if (item) {
      if (para.length) { out.push(`<p>${inline(para.join("<br>"))}</p>`); para = []; }
      const kind = item[1] ? "ol" : "ul";
      if (list !== kind) { if (list) out.push(`</${list}>`); out.push(`<${kind}>`); list = kind; }
      out.push(`<li>${inline(item[2])}</li>`);
    } else if (!line.trim()) {
      flush();
    } else {
      if (list) { out.push(`</${list}>`); list = null; }
      para.push(line);
    }
  }
  flush();
  return out.join("");
}

// --- the API ----------------------------------------------------------------------------------
async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { Authorization: `Bearer ${state.token}`, "Content-Type": "application/json", ...(options.headers || {}) },
  });
  if (!response.ok && !options.stream) {
    let message = response.statusText;
    try { message = (await response.json()).error.message; } catch (_) { /* not JSON */ }
    throw new Error(`${response.status}: ${message}`);
  }
  return options.stream ? response : response.json();
}

// Server-Sent Events from a fetch body: blank-line separated, "data:" lines joined by "\n".
async function* events(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
      if (data.length) yield JSON.parse(data.join("\n"));
    }
  }
}

// --- rendering -----------------------------------------------------------------------------
function add(kind, html) {
  const node = document.createElement("div");
  node.className = `msg ${kind}`;
  if (html !== undefined) node.innerHTML = html;
  $("log").appendChild(node);
  $("log").scrollTop = $("log").scrollHeight;
  return node;
}

function toolNode(parent, call) {
  const details = document.createElement("details");
  details.className = "tool";
  details.dataset.call = call.id;
  const summary = document.createElement("summary");
  summary.textContent = `→ ${call.name}(${JSON.stringify(call.arguments || {})})`;
  const pre = document.createElement("pre");
  pre.textContent = "…";
  details.append(summary, pre);
  parent.appendChild(details);
  return details;
}

function toolResult(parent, result) {
  const details = parent.querySelector(`details[data-call="${CSS.escape(result.call_id)}"]`) || toolNode(parent, { id: result.call_id, name: result.name });
  details.querySelector("pre").textContent = result.content;
  details.querySelector("summary").textContent += result.is_error ? " ✗" : " ✓";
  if (result.is_error) details.classList.add("failed");
}

class Reply {
  constructor() {
    this.node = add("assistant");
    this.text = "";
    this.part = null;
    this.scheduled = false;
  }
  delta(text) {
    if (!this.part) {
      this.part = document.createElement("div");
      this.part.className = "text";
      this.node.appendChild(this.part);
      this.text = "";
    }
    this.text += text;
    if (!this.scheduled) {
      this.scheduled = true;
      requestAnimationFrame(() => { this.scheduled = false; if (this.part) this.part.innerHTML = markdown(this.text); });
    }
  }
  endText() {
    if (this.part) this.part.innerHTML = markdown(this.text);
    this.part = null;
  }
  line(kind, text) {
    this.endText();
    const p = document.createElement("p");
    p.className = kind;
    p.textContent = text;
    this.node.appendChild(p);
  }
  ask(sessionId, question) {
    this.endText();
    const box = document.createElement("div");
    box.className = "ask";
    box.dataset.request = question.id;
    const text = document.createElement("p");
    text.textContent = `crab wants to use ${question.tool} (${question.permission}): ${question.summary}`;
    box.appendChild(text);
    for (const [answer, label] of [["once", "Allow once"], ["always", "Always in this session"], ["deny", "Deny"]]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      button.dataset.answer = answer;
      button.addEventListener("click", async () => {
        box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
        try {
          await api(`/v1/sessions/${sessionId}/permissions/${question.id}`, { method: "POST", body: JSON.stringify({ answer }) });
        } catch (error) { status(error.message); }
      });
      box.appendChild(button);
    }
    this.node.appendChild(box);
  }
  question(sessionId, question) {
    // a tool's question (crab-plan's approval): its choices as buttons, words where it takes them
    this.endText();
    const box = document.createElement("div");
    box.className = "ask";
    box.dataset.request = question.id;
    const text = document.createElement("p");
    text.textContent = question.text;
    box.appendChild(text);
    const send = async (answer) => {
      try {
        await api(`/v1/sessions/${sessionId}/questions/${question.id}`, { method: "POST", body: JSON.stringify({ answer }) });
        box.querySelectorAll("button, input").forEach((b) => { b.disabled = true; });
      } catch (error) { status(error.message); }
    };
    for (const choice of question.choices) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = choice;
      button.dataset.choice = choice;
      button.addEventListener("click", () => send(choice));
      box.appendChild(button);
    }
    if (question.free_text) {
      const words = document.createElement("input");
      words.type = "text";
      words.placeholder = "or type your answer";
      words.addEventListener("keydown", (event) => {
        if (event.key === "Enter" && words.value.trim()) send(words.value);
      });
      box.appendChild(words);
    }
    this.node.appendChild(box);
  }
  answered(event) {
    const box = this.node.querySelector(`.ask[data-request="${CSS.escape(event.id)}"]`);
    if (box) {
      box.querySelectorAll("button").forEach((b) => { b.disabled = true; });
      const p = document.createElement("p");
      p.textContent = `→ ${event.answer}`;
      box.appendChild(p);
    }
  }
  handle(sessionId, event) {
    switch (event.type) {
      case "text_delta": this.delta(event.text); break;
      case "tool_call": this.endText(); toolNode(this.node, event.call); break;
      case "tool_result": toolResult(this.node, event); break;
      case "permission_request": this.ask(sessionId, event); break;
      case "permission_answer": this.answered(event); break;
      case "question": this.question(sessionId, event); break;
      case "question_answer": this.answered({ id: event.id, answer: event.answer ?? "(no answer)" }); break;
      case "session_switch": state.session = event.session_id; refreshSessions(); break;
      case "command_output": this.line(event.is_error ? "error" : "notice", event.text); break;
      case "notice": this.line("notice", event.message); break;
      case "error": this.line("error", event.message); break;
      case "turn_end":
        this.endText();
        if (event.stop === "aborted") this.line("notice", "(stopped)");
        else if (event.stop === "error") this.line("error", event.error || "the turn failed");
        break;
      default: break;
    }
    $("log").scrollTop = $("log").scrollHeight;
  }
}

function status(text) { $("status").textContent = text || ""; }

function showHistory(messages) {
  $("log").innerHTML = "";
  let reply = null;
  for (const m of messages) {
    if (m.role === "user") {
      add("user").textContent = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
      reply = null;
    } else if (m.role === "assistant") {
      reply = reply || new Reply();
      if (m.content) { reply.delta(m.content); reply.endText(); }
      for (const call of m.tool_calls || []) toolNode(reply.node, call);
    } else if (m.role === "tool" && reply) {
      toolResult(reply.node, m);
    }
  }
}

async function refreshSessions() {
  const { sessions } = await api("/v1/sessions");
  const list = $("sessions");
  list.innerHTML = "";
  for (const s of sessions) {
    const li = document.createElement("li");
    li.textContent = s.title || s.id;
    li.title = s.id;
    li.dataset.id = s.id;
    if (state.session === s.id) li.className = "current";
    li.addEventListener("click", () => openSession(s.id));
    list.appendChild(li);
  }
}

async function openSession(id) {
  const session = await api(`/v1/sessions/${id}`);
  state.session = id;
  showHistory(session.messages);
  await refreshSessions();
  $("input").focus();
}

async function newSession(title) {
  const made = await api("/v1/sessions", { method: "POST", body: JSON.stringify({ title: title || "" }) });
  state.session = made.id;
  $("log").innerHTML = "";
  await refreshSessions();
}

function setBusy(busy) {
  state.busy = busy;
  $("send").disabled = busy;
  $("abort").disabled = !busy;
  status(busy ? "crab is working…" : "");
}

async function send(text) {
  if (!state.session) await newSession(text.slice(0, 60));
  const sessionId = state.session;
  add("user").textContent = text;
  const reply = new Reply();
  setBusy(true);
  try {
    const response = await api(`/v1/sessions/${sessionId}/messages`, { method: "POST", body: JSON.stringify({ text }), stream: true });
    if (!response.ok) {
      let message = response.statusText;
      try { message = (await response.json()).error.message; } catch (_) { /* not JSON */ }
      reply.line("error", `${response.status}: ${message}`);
      return;
    }
    for await (const event of events(response)) reply.handle(sessionId, event);
  } catch (error) {
    reply.line("error", String(error.message || error));
  } finally {
    reply.endText();
    setBusy(false);
  }
}

async function connect(token) {
  state.token = token;
  try {
    await refreshSessions();
  } catch (error) {
    status(error.message);
    return;
  }
  sessionStorage.setItem("crab-token", token);
  $("login").hidden = true;
  $("new").hidden = false;
  $("composer").hidden = false;
  status("");
  $("input").focus();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", (e) => { e.preventDefault(); connect($("token").value.trim()); });
  $("new").addEventListener("click", () => { state.session = null; $("log").innerHTML = ""; refreshSessions(); $("input").focus(); });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = $("input").value.trim();
    if (!text || state.busy) return;
    $("input").value = "";
    send(text);
  });
  $("input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); $("composer").requestSubmit(); }
  });
  $("abort").addEventListener("click", async () => {
    if (state.session) {
      try { await api(`/v1/sessions/${state.session}/abort`, { method: "POST" }); } catch (error) { status(error.message); }
    }
  });
  if (state.token) connect(state.token);
});
