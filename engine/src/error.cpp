// The engine's edge: what the layers below throw, in one plain line.
#include "stx/engine/error.h"

#include <c10/util/Exception.h>

#include <exception>
#include <new>
#include <nlohmann/json.hpp>

#include "stx/kernels/error.h"
#include "stx/models/model_config.h"

namespace stx::engine {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

// nlohmann's messages start with their id ("[json.exception.type_error.302] type must be number, ...").
std::string without_json_id(const std::string& text) {
  const size_t end = text.rfind("] ", text.find(' '));
  return end == std::string::npos ? text : text.substr(end + 2);
}

}  // namespace

void rethrow_as_error() {
  try {
    throw;
  } catch (const Error&) {
    throw;  // the original object: a front end's own subtype (the CLI's usage errors) stays what it is
  } catch (const kernels::Error& e) {
    throw Error(e.what());
  } catch (const models::ConfigError& e) {
    throw Error(e.what());
  } catch (const nlohmann::json::exception& e) {
    throw Error("a JSON value is not what was expected: " + without_json_id(e.what()));
  } catch (const c10::Error& e) {
    const std::string text = first_line(e.what_without_backtrace());
    if (text.find("alloc") != std::string::npos) throw Error("out of memory (" + text + "); try a smaller size");
    throw Error("LibTorch: " + text);
  } catch (const std::bad_alloc&) {
    throw Error("out of memory; try a smaller size");
  } catch (const std::exception& e) {
    throw Error(first_line(e.what()));
  } catch (...) {
    throw Error("an unexpected error stopped the job");
  }
}

}  // namespace stx::engine
