// A non-owning reference to a callable: what a synchronous call (ThreadPool::run) needs, without
// std::function's heap allocation for a lambda that captures more than two pointers. The callable
// must outlive the FunctionRef; binding a temporary lambda in a call's argument list is fine,
// since the temporary lives until the call returns.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace ridge {

template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, FunctionRef> && std::is_invocable_r_v<R, F&, Args...>)
  FunctionRef(F&& f) noexcept  // NOLINT(google-explicit-constructor): binds like a reference
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}

  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

}  // namespace ridge
