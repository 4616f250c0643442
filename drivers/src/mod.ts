// Driver data and driver code together: the built-in descriptions and what compiles them into
// drivers. The description format itself is contract (SVC_DRIVERS_DIR, GET /v2/platforms) and
// stays in @svc/proto.
export { BUILTIN_DRIVERS } from './builtin-drivers.js';
export { compileDriver, withLoginCredentials } from './compile.js';
export { DRIVERS, getDriver, installUserDrivers, userDriverDescriptions } from './registry.js';
export { ciscoLike, escapeRegExp, keepOutput, stripContextLines } from './driver.js';
export type {
  CommitStep,
  ConfigMode,
  Confirmation,
  Driver,
  EnableMode,
  SaveStep,
} from './driver.js';
