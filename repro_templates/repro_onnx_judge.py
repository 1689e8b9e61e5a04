# --- The judge every compiler's reproducer shares: each output against its float64 values. ---
RTOL, ULPS = 1e-2, 64


def far_elements(actual, expected):
    # Elements off by more than RTOL of their float64 value plus ULPS ulps of the output's dtype.
    ulp = np.spacing(np.abs(expected).astype(actual.dtype)).astype(np.float64)
    return np.abs(actual.astype(np.float64) - expected) > RTOL * np.abs(expected) + ULPS * ulp


def compare(name, actual, expected):
    # One output: a line of what it holds against float64; True when it is wrong.
    if actual.dtype.kind != expected.dtype.kind and not (actual.dtype.kind == 'f' and expected.dtype.kind == 'f'):
        print(f'  {name}: {COMPILER} returned {actual.dtype}{list(actual.shape)}, float64 reference {expected.dtype}{list(expected.shape)}')
        return True
    if actual.shape != expected.shape:
        print(f'  {name}: {COMPILER} returned shape {list(actual.shape)}, expected {list(expected.shape)}')
        return True
    if actual.dtype.kind != 'f':
        wrong = int(np.count_nonzero(actual != expected))
        print(f'  {name}: {actual.dtype}{list(actual.shape)}: {wrong} of {actual.size} elements differ from the expected values')
        return wrong > 0
    finite = np.isfinite(expected)
    nonfinite = finite & ~np.isfinite(actual)
    far = finite & np.isfinite(actual) & far_elements(actual, expected)
    err = np.abs(actual.astype(np.float64) - expected)
    max_err = float(np.max(err[finite & np.isfinite(actual)], initial=0.0))
    print(f'  {name}: {actual.dtype}{list(actual.shape)}: max |actual - float64| = {max_err:.6g}; '
          f'{int(np.count_nonzero(far))} element(s) far off, {int(np.count_nonzero(nonfinite))} not finite where float64 is')
    for index in list(zip(*np.nonzero(far | nonfinite)))[:8]:
        print(f'    [{", ".join(str(int(i)) for i in index)}]: expected {float(expected[index]):.9g}, {COMPILER} {float(actual[index]):.9g}')
    return bool(far.any() or nonfinite.any())


def reproduce(settings, build, run, build_fails):
    # build(model path) -> (compiled, its input names in order); run(compiled, arrays) -> arrays.
    here = os.path.dirname(os.path.abspath(__file__))
    print(f'{settings}, numpy {np.__version__}')
    try:
        compiled, input_names = build(os.path.join(here, 'repro.onnx'))
    except Exception as e:  # each compiler raises its own exception types
        print(f'REPRODUCED: {COMPILER} {build_fails}:\n{e}')
        return 1
    feeds = [np.load(os.path.join(here, INPUTS_DIR, name + '.npy')) for name in input_names]
    try:
        actual = run(compiled, feeds)
    except Exception as e:
        print(f'REPRODUCED: {COMPILER} fails running the model:\n{e}')
        return 1
    wrong = False
    for name, value in zip(OUTPUTS, actual):
        wrong |= compare(name, np.asarray(value), np.load(os.path.join(here, EXPECTED_DIR, name + '.npy')))
    print(f'REPRODUCED: {COMPILER}\'s outputs are wrong' if wrong else f'NOT REPRODUCED: {COMPILER}\'s outputs agree with float64')
    return 1 if wrong else 0
