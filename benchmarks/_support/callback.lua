-- wrk's script for benchmarks/callback_intake_gunicorn.py: every request a callback as the service sends one,
-- naming a new uuid (arguments after "--": a seed, then the community id); at the end one line
-- "RESULT requests duration_us p50_us p95_us p99_us socket_errors non_2xx".
local counter, prefix, community = 0, "", ""
local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end
function init(args)
  math.randomseed(tonumber(args[1]) + tid * 7919)
  prefix = string.format("%08x", math.random(0, 2147483647))
  community = args[2]
end
local headers = {
  ["Content-Type"] = "application/json",
  ["User-Agent"] = "PayCollect-Callback/1.0",
  ["X-Request-Id"] = "9f1c2a7e-5d1b-4c1e-9a55-3d1f0c6b7e21",
}
request = function()
  counter = counter + 1
  local uuid = string.format("%s-%04x-4%03x-a%03x-%012x", prefix, tid,
    math.random(0, 4095), math.random(0, 4095), counter)
  local parent = string.format("%s-%04x-4%03x-b%03x-%012x", prefix, tid,
    math.random(0, 4095), math.random(0, 4095), counter)
  local body = '{"total_amount_piasters": 10450, "total_amount": 104.5, "transaction_uuid": "' .. uuid ..
    '", "transaction_status": "SUCCESSFUL", "member_id": null, "payment_id": "4821", "merchant_id": "' ..
    community .. '", "recurring": {"is_sub_payment": false, "parent_transaction": "' .. parent ..
    '"}, "Membership number": "A-10293", "Branch": "Heliopolis"}'
  return wrk.format("POST", nil, headers, body)
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(95), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
