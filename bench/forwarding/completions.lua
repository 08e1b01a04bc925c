-- wrk script of the forwarding benchmark (scripts/bench-forwarding.sh): POSTs one fixed OpenAI
-- completion request and prints one machine-readable RESULT line when the run ends.
--
-- Environment:
--   BENCH_STREAM=1        ask for "stream": true (server-sent events)
--   BENCH_PROMPT_REPEAT   the prompt is this many copies of a 45-byte sentence (default 12)
--   BENCH_CHECK=1         check every response (status 200, the canned text's last word, and
--                         "[DONE]" when streaming) and report bad ones; slower, for the sanity
--                         pass before measuring, not for the measured runs.
local stream = os.getenv("BENCH_STREAM") == "1"
local repeats = tonumber(os.getenv("BENCH_PROMPT_REPEAT") or "12")
local check = os.getenv("BENCH_CHECK") == "1"

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = string.format(
  '{"model":"fixed","prompt":"%s","max_tokens":16,"stream":%s}',
  string.rep("The quick brown fox jumps over the lazy dog. ", repeats),
  stream and "true" or "false")

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

if check then
  bad = 0
  first_bad = ""
  function response(status, headers, body)
    local ok = status == 200 and body:find("token15", 1, true) ~= nil
    if stream then ok = ok and body:find("data: [DONE]", 1, true) ~= nil end
    if not ok then
      bad = bad + 1
      if first_bad == "" then first_bad = status .. " " .. body:sub(1, 200) end
    end
  end
end

function done(summary, latency, requests)
  local bad_total, first = 0, ""
  for _, t in ipairs(threads) do
    bad_total = bad_total + (t:get("bad") or 0)
    local f = t:get("first_bad")
    if f and f ~= "" and first == "" then first = f end
  end
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d rps=%.1f p50_us=%d p90_us=%d p99_us=%d errors=%d non2xx=%d bad=%d\n",
    summary.requests, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status, bad_total))
  if first ~= "" then io.write("FIRST_BAD " .. first:gsub("\n", "\\n") .. "\n") end
end
