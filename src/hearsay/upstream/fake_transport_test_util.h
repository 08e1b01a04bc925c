// FakeTransport: a scripted UpstreamTransport for tests in virtual time. Each Send is recorded;
// the test answers it with Headers/Body/Done, which run the callbacks at once (as the real
// transport would from a posted task). Cancelled calls ignore the script.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "hearsay/upstream/upstream_transport.h"

namespace hearsay::upstream::testing {

class FakeTransport final : public UpstreamTransport {
 public:
  struct Call {
    UpstreamHttpRequest request;
    UpstreamCallbacks callbacks;
    bool cancelled = false;
    bool done = false;

    void Headers(int status) {
      if (!cancelled && !done) callbacks.on_headers(status);
    }
    void Body(std::string_view data) {
      if (!cancelled && !done) callbacks.on_body(data);
    }
    void Done(Status s = OkStatus()) {
      if (cancelled || done) return;
      done = true;
      callbacks.on_done(std::move(s));
    }
    // A whole 200 response.
    void Respond(int status, std::string_view body) {
      Headers(status);
      Body(body);
      Done();
    }
  };

  std::unique_ptr<UpstreamCall> Send(UpstreamHttpRequest request,
                                     UpstreamCallbacks callbacks) override {
    auto call = std::make_shared<Call>();
    call->request = std::move(request);
    call->callbacks = std::move(callbacks);
    calls_.push_back(call);
    return std::make_unique<Handle>(call);
  }

  // Calls whose target is `target` and that are still open, oldest first.
  std::vector<std::shared_ptr<Call>> Open(std::string_view target) const {
    std::vector<std::shared_ptr<Call>> out;
    for (const auto& c : calls_) {
      if (c->request.target == target && !c->cancelled && !c->done) out.push_back(c);
    }
    return out;
  }
  const std::vector<std::shared_ptr<Call>>& calls() const { return calls_; }

 private:
  class Handle final : public UpstreamCall {
   public:
    explicit Handle(std::shared_ptr<Call> c) : call_(std::move(c)) {}
    ~Handle() override { Cancel(); }
    void Cancel() override {
      if (!call_->done) call_->cancelled = true;
    }

   private:
    std::shared_ptr<Call> call_;
  };

  std::vector<std::shared_ptr<Call>> calls_;
};

}  // namespace hearsay::upstream::testing
