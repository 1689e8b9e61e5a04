// The inductor backend's options that are reprokit's own, not torch._inductor.config options: how
// far down PyTorch's compile stack a graph goes (torch.compile's backend), which of its subsystems'
// applications are turned off (in PyTorch's CompilerBisector's names), both walked by `reprokit
// bisect`, and the device. Every other backend option of the inductor backend is a config option.
#pragma once
#include <string_view>

namespace reprokit {

inline constexpr std::string_view kInductorStageOption = "compile_backend";
inline constexpr std::string_view kInductorDisableOption = "disabled_subsystems";
// Where Inductor compiles and runs the graph: "cpu" (C++/OpenMP) or "cuda" (Triton), as the
// program that was captured ran it. reprokit's own judgement of the graph stays on the CPU.
inline constexpr std::string_view kInductorDeviceOption = "device";
inline constexpr std::string_view kInductorDevices[] = {"cpu", "cuda"};
// torch.compile's backends, from the least of PyTorch's compile stack to the whole of it.
inline constexpr std::string_view kInductorStages[] = {"eager", "aot_eager", "aot_eager_decomp_partition", "inductor"};

}  // namespace reprokit
