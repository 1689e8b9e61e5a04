// The inductor backend's options that are reprokit's own, not torch._inductor.config options: how
// far down PyTorch's compile stack a graph goes (torch.compile's backend) and which of its
// subsystems' applications are turned off (in PyTorch's CompilerBisector's names). `reprokit
// bisect` walks them; every other backend option of the inductor backend is a config option.
#pragma once
#include <string_view>

namespace reprokit {

inline constexpr std::string_view kInductorStageOption = "compile_backend";
inline constexpr std::string_view kInductorDisableOption = "disabled_subsystems";
// torch.compile's backends, from the least of PyTorch's compile stack to the whole of it.
inline constexpr std::string_view kInductorStages[] = {"eager", "aot_eager", "aot_eager_decomp_partition", "inductor"};

}  // namespace reprokit
